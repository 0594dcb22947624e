package synth

import "strings"

// The world's language. Passages and questions use disjoint words (apart
// from entity names): a passage says "X was born in Y", a question asks for
// "the birthplace of X". So a search for a question's text can only match
// passages through the name it mentions, which is what lets Generate
// guarantee that no multi-hop question is answered by that search alone.

// Attribute values, one list per kind that has an attribute.
var (
	jobs      = []string{"painter", "farmer", "doctor", "teacher", "baker", "sailor", "singer", "writer", "potter", "tailor", "miner", "builder"}
	landmarks = []string{"bridge", "tower", "market", "harbor", "castle", "temple", "garden", "library"}
	products  = []string{"ships", "bread", "lamps", "shoes", "cloth", "paper", "glass", "bells"}
)

// Question words.
var (
	openers      = []string{"Name", "Give"}
	questionGlue = []string{"the", "of"}
)

// questionWords are the words only questions use.
func questionWords(s *schema) []string {
	ws := append([]string{}, questionGlue...)
	for _, o := range openers {
		ws = append(ws, strings.ToLower(o))
	}
	for _, r := range s.relations {
		ws = append(ws, r.noun)
	}
	for _, a := range attributes {
		ws = append(ws, a.noun)
	}
	return ws
}

// attributeWords are all attribute values.
func attributeWords() []string {
	var ws []string
	for _, a := range attributes {
		ws = append(ws, a.values...)
	}
	return ws
}

// templateWords are all words of the language that are not names.
func templateWords(s *schema) []string {
	return append(append(append([]string{}, s.passageWords...), questionWords(s)...), attributeWords()...)
}
