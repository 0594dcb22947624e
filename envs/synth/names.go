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

// namer draws distinct name words such that no word is a substring of
// another word of the world, nor contains an attribute value (a possible
// answer). Then finding a name or an answer in a text by substring never
// matches the wrong word.
type namer struct {
	rng      *rand.Rand
	words    []string // lowercase name words drawn so far
	reserved []string // lowercase template and attribute words
	answers  []string // lowercase attribute values
}

func newNamer(rng *rand.Rand, s *schema) *namer {
	return &namer{rng: rng, reserved: templateWords(s), answers: attributeWords()}
}

// word returns a new capitalised name word.
func (n *namer) word() (string, error) {
	for range 10000 {
		w := n.draw()
		if n.fits(w) {
			n.words = append(n.words, w)
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

func (n *namer) fits(w string) bool {
	for _, x := range n.words {
		if strings.Contains(x, w) || strings.Contains(w, x) {
			return false
		}
	}
	for _, x := range n.reserved {
		if strings.Contains(x, w) {
			return false
		}
	}
	for _, a := range n.answers {
		if strings.Contains(w, a) {
			return false
		}
	}
	return true
}
