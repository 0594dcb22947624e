package synth

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode"

	"github.com/agentrl/agentrl/envs"
)

// maxDraws bounds the random chains drawn for one question.
const maxDraws = 2000

// chain is how a question is answered: start at an entity, follow
// relations, and end at an entity or read an attribute of the last one.
type chain struct {
	path []int      // entities visited, start first
	rels []relation // relations followed, len(path)-1 of them
	attr *attribute // read from the last entity; nil when the answer is that entity
}

// hops is the number of passages the chain reads.
func (c chain) hops() int {
	if c.attr != nil {
		return len(c.path)
	}
	return len(c.path) - 1
}

func (c chain) key() string {
	k := fmt.Sprint(c.path[0])
	for _, r := range c.rels {
		k += ">" + r.name
	}
	if c.attr != nil {
		k += ">" + c.attr.noun
	}
	return k
}

// answer is what the chain ends at.
func (w *World) answer(c chain) string {
	last := w.Entities[c.path[len(c.path)-1]]
	if c.attr != nil {
		return last.Trait
	}
	return last.Name
}

// question words the chain: "Name the nation of the birthplace of X."
func (w *World) question(c chain, opener string) string {
	nouns := make([]string, 0, len(c.rels)+1)
	if c.attr != nil {
		nouns = append(nouns, c.attr.noun)
	}
	for i := len(c.rels) - 1; i >= 0; i-- {
		nouns = append(nouns, c.rels[i].noun)
	}
	return opener + " the " + strings.Join(nouns, " of the ") + " of " + w.Entities[c.path[0]].Name + "."
}

// draw walks a random chain of the given hops from a random entity,
// never visiting an entity twice. ok is false when the walk got stuck.
func (w *World) draw(rng *rand.Rand, hops int) (c chain, ok bool) {
	c.path = []int{rng.IntN(len(w.Entities))}
	for c.hops() < hops {
		cur := w.Entities[c.path[len(c.path)-1]]
		type option struct {
			r *relation
			a *attribute
		}
		var opts []option
		for i := range w.schema.relations {
			r := &w.schema.relations[i]
			if r.from == cur.Kind && !contains(c.path, w.byName[cur.Links[r.name]]) {
				opts = append(opts, option{r: r})
			}
		}
		if c.hops()+1 == hops { // reading an attribute ends the chain
			for i := range attributes {
				if attributes[i].kind == cur.Kind {
					opts = append(opts, option{a: &attributes[i]})
				}
			}
		}
		if len(opts) == 0 {
			return c, false
		}
		o := opts[rng.IntN(len(opts))]
		if o.a != nil {
			c.attr = o.a
			break
		}
		c.rels = append(c.rels, *o.r)
		c.path = append(c.path, w.byName[cur.Links[o.r.name]])
	}
	return c, true
}

// makeQuestions draws Config.Questions distinct chains, hops cycling
// 1..MaxHops, and splits them at random into train, validation and test; then the
// out-of-domain questions (makeOOD).
//
// A question of two or more hops is kept only if its answer appears in no
// passage that shares a word with the question. Question words other than
// the start entity's name never occur in passages (see language.go), and
// name words are unique to their entity, so those passages are the start
// entity's own and the ones that mention it: whatever a search for the
// question text returns, the answer is not in it. With out-of-domain
// questions asked for, no in-domain chain follows a held-out composition.
func (w *World) makeQuestions(rng *rand.Rand) error {
	mentions := w.mentionIndex()
	seen := map[string]bool{}
	w.chains = map[string]chain{}
	avoid := w.Config.OODQuestions > 0 || w.Config.AvoidHeldOut
	var tasks []envs.Task
	for i := range w.Config.Questions {
		hops := 1 + i%w.Config.MaxHops
		var c chain
		found := false
		for range maxDraws {
			var ok bool
			c, ok = w.draw(rng, hops)
			if ok && !seen[c.key()] && (hops == 1 || !w.leaks(c, mentions)) && !(avoid && c.composes(w.schema.heldOut)) {
				found = true
				break
			}
		}
		if !found {
			return errTooSmall(hops, i, w.Config.Questions)
		}
		seen[c.key()] = true
		tasks = append(tasks, w.task(c, fmt.Sprintf("synth-%d-%05d", w.Config.Seed, i), rng))
	}
	rng.Shuffle(len(tasks), func(i, j int) { tasks[i], tasks[j] = tasks[j], tasks[i] })
	nTest, nVal := w.Config.testCount(), w.Config.ValQuestions
	nTrain := len(tasks) - nTest - nVal
	w.Train, w.Val, w.Test = tasks[:nTrain], tasks[nTrain:nTrain+nVal], tasks[nTrain+nVal:]
	for i := range w.Train {
		w.Train[i].Meta = map[string]string{"split": "train"}
	}
	for i := range w.Val {
		w.Val[i].Meta = map[string]string{"split": "validation"}
	}
	for i := range w.Test {
		w.Test[i].Meta = map[string]string{"split": "test"}
	}
	return w.makeOOD(rng, seen)
}

// mentionIndex maps each lowercase word to the passages containing it.
func (w *World) mentionIndex() map[string][]int {
	m := map[string][]int{}
	for i, p := range w.Passages {
		for _, word := range words(p.Title + " " + p.Text) {
			if l := m[word]; len(l) == 0 || l[len(l)-1] != i {
				m[word] = append(l, i)
			}
		}
	}
	return m
}

// leaks reports whether the chain's answer is in a passage that contains a
// word of the start entity's name.
func (w *World) leaks(c chain, mentions map[string][]int) bool {
	answer := strings.ToLower(w.answer(c))
	for _, word := range words(w.Entities[c.path[0]].Name) {
		for _, p := range mentions[word] {
			if strings.Contains(strings.ToLower(w.Passages[p].Text), answer) {
				return true
			}
		}
	}
	return false
}

// words splits text into lowercase words.
func words(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

func contains(path []int, i int) bool {
	for _, p := range path {
		if p == i {
			return true
		}
	}
	return false
}
