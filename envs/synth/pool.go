package synth

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// poolSeed seeds every name pool: the pool depends on a world's size and
// schema only, never on its seed, so that every world of a fresh-worlds
// run (and every run of the same size) speaks one vocabulary.
const poolSeed = 0x9001

// PoolFactor is how many names a pool holds per entity of a world, for
// every kind: a world uses a quarter of each kind's names, so a name's
// facts differ from world to world and a name is in a given world only
// one time in four.
const PoolFactor = 4

// Pool is a fixed set of names that fresh worlds draw their entities
// from: per kind, PoolFactor times a world's count of that kind (people:
// as many given and as many family words). Every word is unique and no
// word contains another, nor a template word, nor an answer, as in a
// world of its own names.
type Pool struct {
	kinds           map[Kind][]string // country, city and company names
	given, families []string          // people's given and family names
}

// NewPool draws the name pool of worlds shaped like cfg (its Entities and
// Relations; its Seed is not used).
func NewPool(cfg Config) (*Pool, error) {
	cfg = Config{Entities: cfg.Entities, Relations: cfg.Relations, Questions: 1, MaxHops: 1}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if NameWords(cfg.Entities, true) > MaxNameWords {
		return nil, fmt.Errorf("synth name pool: worlds of %d entities take a pool of more name words than the %d the name generator can "+
			"draw with none containing another (%d times a world's: a word per entity, a second per person): at most about %d entities",
			cfg.Entities, MaxNameWords, PoolFactor, MaxEntities(true))
	}
	rng := rand.New(rand.NewPCG(poolSeed, 0x9001))
	names := newNamer(rng, schemas[cfg.Relations])
	counts := cfg.kindCounts()
	draw := func(n int) ([]string, error) {
		out := make([]string, n)
		for i := range out {
			w, err := names.word()
			if err != nil {
				return nil, err
			}
			out[i] = w
		}
		return out, nil
	}
	p := &Pool{kinds: map[Kind][]string{}}
	for _, k := range kindOrder {
		if k == Person {
			continue
		}
		ws, err := draw(PoolFactor * counts[k])
		if err != nil {
			return nil, err
		}
		p.kinds[k] = ws
	}
	var err error
	if p.given, err = draw(PoolFactor * counts[Person]); err != nil {
		return nil, err
	}
	if p.families, err = draw(PoolFactor * counts[Person]); err != nil {
		return nil, err
	}
	return p, nil
}

// Words are every name word of the pool, for a vocabulary that holds every
// world's names.
func (p *Pool) Words() []string {
	var ws []string
	for _, k := range kindOrder {
		ws = append(ws, p.kinds[k]...)
	}
	return slices.Concat(ws, p.given, p.families)
}

// names draws the names of n entities of kind k, all different, from the
// pool: for people a given and a family name, each used once in the world.
func (p *Pool) names(rng *rand.Rand, k Kind, n int) []string {
	if k != Person {
		ws := p.kinds[k]
		out := make([]string, n)
		for i, j := range rng.Perm(len(ws))[:n] {
			out[i] = ws[j]
		}
		return out
	}
	given, family := rng.Perm(len(p.given)), rng.Perm(len(p.families))
	out := make([]string, n)
	for i := range out {
		out[i] = p.given[given[i]] + " " + p.families[family[i]]
	}
	return out
}

// fits reports whether a world of cfg's shape can draw its names from p.
func (p *Pool) fits(cfg Config) bool {
	for k, n := range cfg.kindCounts() {
		if k == Person {
			if n > len(p.given) || n > len(p.families) {
				return false
			}
		} else if n > len(p.kinds[k]) {
			return false
		}
	}
	return true
}

// Contexts returns every name word of the pool, and every attribute
// value, written after each character that precedes a name word of world
// w in texts (texts written about w: its passages, rendered prompts and
// demonstrations), and alone. A tokenizer that cuts a letter run together
// with the one character before it (Qwen's pre-tokenizer: " Voza",
// "\"Voza") then holds every world's names in every context w's texts
// put a name in.
func (p *Pool) Contexts(w *World, texts []string) []string {
	prefixes := map[string]bool{"": true}
	for _, e := range w.Entities {
		for _, x := range strings.Fields(e.Name) {
			for _, t := range texts {
				for rest, at := t, strings.Index(t, x); at >= 0; at = strings.Index(rest, x) {
					if at > 0 {
						r, _ := utf8.DecodeLastRuneInString(rest[:at])
						if !unicode.IsLetter(r) && !unicode.IsNumber(r) && r != '\n' && r != '\r' {
							prefixes[string(r)] = true
						}
					}
					rest = rest[at+len(x):]
				}
			}
		}
	}
	var out []string
	for _, pre := range slices.Sorted(maps.Keys(prefixes)) {
		for _, x := range slices.Concat(p.Words(), attributeWords()) {
			out = append(out, pre+x)
		}
	}
	return out
}
