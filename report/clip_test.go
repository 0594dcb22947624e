package report

import "testing"

// Clip counts characters, not bytes: a cut never splits one, and the
// clipped text is n characters with its "…".
func TestClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"Paris", 5, "Paris"},
		{"Paris!", 5, "Pari…"},
		{"héllo wörld", 5, "héll…"},    // é is two bytes, one character
		{"日本語のテキスト", 4, "日本語…"},        // three bytes each
		{"ok\xffok", 10, "ok\uFFFDok"}, // invalid UTF-8 replaced, not cut
		{"", 3, ""},
	} {
		if got := Clip(c.s, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
