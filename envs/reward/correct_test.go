package reward

import "testing"

func TestCorrect(t *testing.T) {
	for _, c := range []struct {
		answer string
		gold   []string
		want   bool
	}{
		{"Paris", []string{"Paris"}, true},
		{"  the PARIS. ", []string{"Paris"}, true},                               // case, article, punctuation, spaces
		{"Augusta Ada King", []string{"Ada Lovelace", "Augusta Ada King"}, true}, // an alias
		{"1,000", []string{"1000"}, true},                                        // punctuation inside is removed too
		{"Lyon", []string{"Paris"}, false},
		{"", []string{""}, false},     // no answer never matches
		{"the", []string{"a"}, false}, // both normalise to ""
		{"Paris", nil, false},
		{"東京", []string{"東京"}, true},         // non-ASCII kept as is
		{"theatre", []string{"atre"}, false}, // articles only as whole words
	} {
		if got := Correct(c.answer, c.gold); got != c.want {
			t.Errorf("Correct(%q, %q) = %v, want %v", c.answer, c.gold, got, c.want)
		}
	}
}
