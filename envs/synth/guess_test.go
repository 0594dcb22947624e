package synth

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

// questionType is what a question asks without its name: the nouns of its
// chain ("product of the employer of the founder").
func questionType(task envs.Task) string {
	q := strings.TrimSuffix(task.Question, " of "+task.Support[0]+".")
	_, rest, _ := strings.Cut(q, " the ")
	return rest
}

// answerNoun is the first noun a question asks for ("product").
func answerNoun(task envs.Task) string {
	noun, _, _ := strings.Cut(questionType(task), " of the ")
	return noun
}

// counter counts answers per key.
type counter map[string]map[string]int

func (c counter) add(key, answer string) {
	if c[key] == nil {
		c[key] = map[string]int{}
	}
	c[key][answer]++
}

// best is the most frequent answer of key (ties to the smallest), "" when
// key was never seen.
func (c counter) best(key string) string {
	top, n := "", 0
	for a, k := range c[key] {
		if k > n || k == n && a < top {
			top, n = a, k
		}
	}
	return top
}

// guessers are the policies that never search: each answers from the
// question alone, with what the training worlds' questions taught it.
type guessers struct {
	byText, byType, byNoun counter
}

func (g guessers) learn(task envs.Task) {
	g.byText.add(task.Question, task.Answers[0])
	g.byType.add(questionType(task), task.Answers[0])
	g.byNoun.add(answerNoun(task), task.Answers[0])
}

// answer is the guess of each guesser: the most frequent answer of the
// question's answer noun, of its type (else its noun's), and of its exact
// text (the memoriser; else its type's).
func (g guessers) answer(task envs.Task) (noun, typ, text string) {
	noun = g.byNoun.best(answerNoun(task))
	typ = g.byType.best(questionType(task))
	if typ == "" {
		typ = noun
	}
	text = g.byText.best(task.Question)
	if text == "" {
		text = typ
	}
	return noun, typ, text
}

// chance is the EM of a uniform guess among the values the question's
// answer can take: the attribute's values, or the pool's names of the
// answer's kind.
func chance(w *World, task envs.Task, pool *Pool) float64 {
	c := w.chains[task.ID]
	if c.attr != nil {
		return 1 / float64(len(c.attr.values))
	}
	k := w.Entities[c.path[len(c.path)-1]].Kind
	if k == Person {
		return 1 / float64(len(pool.given)*len(pool.families))
	}
	return 1 / float64(len(pool.kinds[k]))
}

// TestFreshWorldsNoSearchIsChance measures the generator before any
// training (docs/experiments.md, amendment 5): make paper's fresh worlds
// (world seeds 11-15; per seed 10 test worlds of 20 test and 10
// out-of-domain questions, 1,000 and 500 in all) against the policies that
// never search, each taught by the questions of 640 training worlds of 16
// (the batches of 40 iterations, 16 times over). Each must score within
// 0.02 of chance (a uniform guess of the answer's kind of value).
// Run with -v to print the figures.
func TestFreshWorldsNoSearchIsChance(t *testing.T) {
	type score struct{ noun, typ, text, chance, n, attr float64 }
	var id, ood score
	sameText, seenText := 0, 0
	for seed := int64(11); seed <= 15; seed++ {
		f := fresh(t, freshShape(seed))
		g := guessers{counter{}, counter{}, counter{}}
		trained := map[string]string{}
		for n := range uint64(640) {
			for _, task := range freshWorld(t, f, RoleTrain, n+1, 16, 0).Train {
				g.learn(task)
				trained[task.Question] = task.Answers[0]
			}
		}
		for n := range uint64(10) {
			w := freshWorld(t, f, RoleTest, n, 20, 10)
			for _, split := range []struct {
				tasks []envs.Task
				s     *score
			}{{w.Test, &id}, {w.OOD, &ood}} {
				for _, task := range split.tasks {
					a := task.Answers[0]
					noun, typ, text := g.answer(task)
					s := split.s
					s.n++
					s.chance += chance(w, task, f.Pool())
					if w.chains[task.ID].attr != nil {
						s.attr++
					}
					for _, x := range []struct {
						guess string
						em    *float64
					}{{noun, &s.noun}, {typ, &s.typ}, {text, &s.text}} {
						if x.guess == a {
							*x.em++
						}
					}
					if prev, ok := trained[task.Question]; ok {
						seenText++
						if prev == a {
							sameText++
						}
					}
				}
			}
		}
	}
	for _, c := range []struct {
		name string
		s    score
	}{{"in-domain", id}, {"out-of-domain", ood}} {
		s := c.s
		t.Logf("%s (%.0f questions, %.0f%% asking an attribute): chance %.3f; most frequent answer per answer noun %.3f, per question type %.3f, per question text %.3f",
			c.name, s.n, 100*s.attr/s.n, s.chance/s.n, s.noun/s.n, s.typ/s.n, s.text/s.n)
		for _, em := range []float64{s.noun, s.typ, s.text} {
			if em/s.n > s.chance/s.n+0.02 {
				t.Errorf("%s: a policy that never searches scores %.3f, more than chance %.3f + 0.02", c.name, em/s.n, s.chance/s.n)
			}
		}
	}
	t.Logf("test questions asked in a training world too: %d of %.0f; with the same answer there: %d (%s)", seenText, id.n+ood.n, sameText, fmt.Sprintf("%.3f", float64(sameText)/float64(max(seenText, 1))))
}
