package envs

import "testing"

// Excerpt keeps short text, cuts long text at n bytes with "...", and never
// splits a rune: "é" is 2 bytes, so a cut at byte 3 of "aéé" keeps "aé".
// What it keeps is Printable.
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
		{"\x1b[2Jgone\x1b[31m", 8, `\x1b[2Jgone...`},
	} {
		if got := Excerpt(tc.s, tc.n); got != tc.want {
			t.Errorf("Excerpt(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// Printable writes control characters as escapes a terminal shows as
// text: ESC (an ANSI sequence), CR, BEL, DEL, a C1 CSI (U+009B) and a
// stray byte that is not UTF-8. Newlines, tabs, other Unicode and a real
// U+FFFD are kept.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"plain é ✓\n\tnext":          "plain é ✓\n\tnext",
		"\x1b[31mred\x1b[0m":         `\x1b[31mred\x1b[0m`,
		"over\rwrite\a\x7f":          `over\x0dwrite\x07\x7f`,
		"c1 \u009b2J":                `c1 \u009b2J`,
		"bad \x9b byte, real \uFFFD": `bad \x9b byte, real ` + "\uFFFD",
	} {
		if got := Printable(in); got != want {
			t.Errorf("Printable(%q) = %q, want %q", in, got, want)
		}
	}
}
