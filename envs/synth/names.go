package synth

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Syllables of made-up names: a consonant and a vowel, optionally closed by
// a soft consonant. The last syllable always ends in "a" or "o": no English
// suffix the Porter stemmer strips ends in either letter, so the search
// index keeps every name as it is and two names never share a stem.
const (
	consonants = "bdfgklmnprstvz"
	vowels     = "aeiou"
	codas      = "lmnr"
	endVowels  = "ao"
)

// MaxNameWords is how many name words a world, or the name pool of fresh
// worlds, may take. The namer's syllables make 9,800 words of two
// syllables and 3,430,000 of three, but so many contain one another that
// it runs out (10,000 draws without a new word) at about 555,000 (554,581
// with the basic schema, 554,899 with the rich one, drawn to the end); up
// to 500,000 a new word takes under 500 draws on average (487 from 450,000
// to 500,000, 37 around 100,000), a world's names seconds.
const MaxNameWords = 500_000

// NameWords is how many name words worlds of entities entities take: one
// per entity and a second (the family name) per person, and with pooled
// (fresh worlds) the pool's PoolFactor times as many. Past MaxNameWords
// entities (each takes a word at least) it is MaxNameWords + 1.
func NameWords(entities int, pooled bool) int {
	if entities > MaxNameWords {
		return MaxNameWords + 1
	}
	n := entities + Config{Entities: entities}.kindCounts()[Person]
	if pooled {
		n *= PoolFactor
	}
	return n
}

// namer draws distinct name words such that no word is a substring of
// another word of the world, nor contains an attribute value (a possible
// answer). Then finding a name or an answer in a text by substring never
// matches the wrong word. It keeps every substring of the words drawn and
// of the template words that a word could be (minWord letters or more), so
// that a new word is checked in a time that does not grow with the world.
type namer struct {
	rng     *rand.Rand
	words   map[string]bool // lowercase name words drawn so far
	inside  map[string]bool // substrings of minWord letters or more of the words drawn and the template words
	answers map[string]bool // lowercase attribute values
}

// minWord is the length of the shortest word draw makes: two syllables of
// a consonant and a vowel.
const minWord = 4

func newNamer(rng *rand.Rand, s *schema) *namer {
	n := &namer{rng: rng, words: map[string]bool{}, inside: map[string]bool{}, answers: map[string]bool{}}
	for _, w := range templateWords(s) {
		n.keepSubstrings(w)
	}
	for _, a := range attributeWords() {
		n.answers[a] = true
	}
	return n
}

// keepSubstrings adds the substrings of w that a word could be to inside.
func (n *namer) keepSubstrings(w string) {
	for i := range w {
		for j := i + minWord; j <= len(w); j++ {
			n.inside[w[i:j]] = true
		}
	}
}

// word returns a new capitalised name word.
func (n *namer) word() (string, error) {
	for range 10000 {
		w := n.draw()
		if n.fits(w) {
			n.words[w] = true
			n.keepSubstrings(w)
			return strings.ToUpper(w[:1]) + w[1:], nil
		}
	}
	return "", fmt.Errorf("no new name word after 10000 draws (%d words drawn): the world is too large for the name generator", len(n.words))
}

// draw makes a lowercase word of two syllables, or three one time in four.
func (n *namer) draw() string {
	syllables := 2
	if n.rng.IntN(4) == 0 {
		syllables = 3
	}
	var b strings.Builder
	for i := range syllables {
		b.WriteByte(consonants[n.rng.IntN(len(consonants))])
		if i == syllables-1 {
			b.WriteByte(endVowels[n.rng.IntN(len(endVowels))])
			break
		}
		b.WriteByte(vowels[n.rng.IntN(len(vowels))])
		if n.rng.IntN(3) == 0 {
			b.WriteByte(codas[n.rng.IntN(len(codas))])
		}
	}
	return b.String()
}

// fits reports whether w may join the words: no word drawn and no
// template word contains it, it contains no word drawn and no answer.
func (n *namer) fits(w string) bool {
	if n.inside[w] {
		return false
	}
	for i := range w {
		for j := i + 1; j <= len(w); j++ {
			if n.words[w[i:j]] || n.answers[w[i:j]] {
				return false
			}
		}
	}
	return true
}
