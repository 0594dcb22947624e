package envs

import "testing"

// Excerpt keeps short text, cuts long text at n bytes with "...", and never
// splits a rune: "é" is 2 bytes, so a cut at byte 3 of "aéé" keeps "aé".
func TestExcerpt(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdefgh", 3, "abc..."},
		{"aéé", 4, "aé..."},
		{"aéé", 2, "a..."},
	} {
		if got := Excerpt(tc.s, tc.n); got != tc.want {
			t.Errorf("Excerpt(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
