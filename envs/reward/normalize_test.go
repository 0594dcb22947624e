package reward

import "testing"

// Each expectation applies the four official steps by hand, in order
// (and was checked against the Python normalize_answer of the HotpotQA script):
// lower -> remove string.punctuation -> \b(a|an|the)\b -> ' ' -> ' '.join(split()).
func TestNormalize(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"The  Eiffel Tower!", "eiffel tower"},      // "the  eiffel tower" -> "   eiffel tower"
		{"an apple a day", "apple day"},             // three articles, whitespace collapsed
		{"Theater", "theater"},                      // "the" inside a word stays
		{"A-ha", "aha"},                             // '-' goes first, so "aha" is not an article
		{"U.S.A.", "usa"},                           // dots removed
		{"rock 'n' roll", "rock n roll"},            // quotes removed, "n" kept
		{"\tHello,\n  World\u00a0 ", "hello world"}, // tab, newline and NBSP are whitespace
		{"the_the", "thethe"},                       // '_' is punctuation, removed before articles
		{"l'Année", "lannée"},                       // Unicode lowercase, é is a letter
		{"café—the best", "café— best"},             // em dash is not ASCII punctuation but is a word boundary
		{"The", ""},                                 // only an article
		{"A", ""},                                   // uppercase article
		{"the\x1cend", "end"},                       // \x1c is whitespace for Python's split()
		{"Price: $1,000.50", "price 100050"},        // '$', ',', '.' removed
		{"THE AN A AND", "and"},                     // "and" is not an article
		{"Fahrenheit 451", "fahrenheit 451"},        // digits kept
		{"\"Hello\" (the song)", "hello song"},      // quotes and parentheses removed
		{"naïve   approach", "naïve approach"},      // ï is a letter
		{"¿Qué?", "¿qué"},                           // ¿ is not ASCII punctuation, ? is
		{"a\u00a0b", "b"},                           // article removed, NBSP collapsed
		{"It's the end.", "its end"},                // apostrophe removed
	}
	for _, c := range cases {
		if got := Normalize(c.in); got != c.want {
			t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
