package tokenizer

import (
	"slices"
	"testing"
)

func pieces(s splitter, text string) []string {
	var out []string
	for i := 0; i < len(text); {
		j := s.next(text, i)
		if j <= i {
			return append(out, "<no progress>")
		}
		out = append(out, text[i:j])
		i = j
	}
	return out
}

// The expected pieces follow the patterns' alternatives by hand; each case
// names the rule it exercises.
func TestChatSplitterQwen(t *testing.T) {
	s, ok := splitterFor(qwenPattern)
	if !ok {
		t.Fatal("Qwen pattern not known")
	}
	cases := []struct {
		text string
		want []string
	}{
		// [^\r\n\p{L}\p{N}]?\p{L}+ takes the space before a word.
		{"Hello world", []string{"Hello", " world"}},
		// \s+(?!\S): the run gives up its last space to the next word.
		{"a   b", []string{"a", "  ", " b"}},
		// ... and takes the whole run at the end of the text.
		{"a   ", []string{"a", "   "}},
		// A single space before a digit: no alternative before \s+ fits.
		{"a 1", []string{"a", " ", "1"}},
		// \s*[\r\n]+ ends after the last newline of the run.
		{"a \n \n  b", []string{"a", " \n \n", " ", " b"}},
		{"a\r\n\r\nb", []string{"a", "\r\n\r\n", "b"}},
		// A tab or an ideographic space also leads a word in (not \r or \n).
		{"\tfoo\u3000bar\nbaz", []string{"\tfoo", "\u3000bar", "\n", "baz"}},
		// U+0085 (NEL) is \s but not [\r\n]; U+00A0 is \s.
		{"a\u0085\u0085b", []string{"a", "\u0085", "\u0085b"}},
		{"x\u00a0\u00a0", []string{"x", "\u00a0\u00a0"}},
		// \p{N} one by one; ½ and Roman numeral Ⅻ are numbers too.
		{"12½Ⅻ", []string{"1", "2", "½", "Ⅻ"}},
		// ` ?[^\s\p{L}\p{N}]+[\r\n]*` keeps trailing newlines with symbols.
		{"x ...\n\ny", []string{"x", " ...\n\n", "y"}},
		{`{"a": 1}`, []string{`{"`, "a", `":`, " ", "1", "}"}},
		// Contractions, case-insensitive, including U+017F LONG S for s.
		{"it's IT'S we'LL 'Ve x'ſy", []string{"it", "'s", " IT", "'S", " we", "'LL", " '", "Ve", " x", "'ſ", "y"}},
		// Not a contraction: the apostrophe leads the letters in.
		{"'xyz", []string{"'xyz"}},
		// Letters of any script; marks (Mn) are not letters.
		{"naïve Ωμέγα", []string{"naïve", " Ωμέγα"}},
		{"e\u0301", []string{"e", "\u0301"}},
		// Invalid bytes are single "other" characters: a run of them, and
		// one leading letters in.
		{"\xff\xfeab", []string{"\xff\xfe", "ab"}},
		{"a\xffb", []string{"a", "\xffb"}},
		{" \xff", []string{" \xff"}},
	}
	for _, c := range cases {
		if got := pieces(s, c.text); !slices.Equal(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.text, got, c.want)
		}
	}
}

func TestChatSplitterLlama3(t *testing.T) {
	s, ok := splitterFor(llama3Pattern)
	if !ok {
		t.Fatal("Llama-3 pattern not known")
	}
	// \p{N}{1,3}: digits in runs of up to three; the rest as Qwen.
	got := pieces(s, "1234567 is 12 ok")
	want := []string{"123", "456", "7", " is", " ", "12", " ok"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestGPT2Splitter(t *testing.T) {
	s, ok := splitterFor(gpt2Pattern)
	if !ok {
		t.Fatal("GPT-2 pattern not known")
	}
	cases := []struct {
		text string
		want []string
	}{
		// ` ?\p{L}+`, ` ?\p{N}+` (whole runs), ` ?[^\s\p{L}\p{N}]+`.
		{"Hello world 2024!!", []string{"Hello", " world", " 2024", "!!"}},
		// Case-sensitive contractions: "'S" is not one.
		{"it's IT'S", []string{"it", "'s", " IT", "'", "S"}},
		// No lead-in other than a space: a tab is a piece of its own, and
		// \s+(?!\S) splits runs as in Qwen's pattern; no newline rule.
		{"a\tb  c \n d", []string{"a", "\t", "b", " ", " c", " \n", " d"}},
		{"x   ", []string{"x", "   "}},
	}
	for _, c := range cases {
		if got := pieces(s, c.text); !slices.Equal(got, c.want) {
			t.Errorf("%q: got %q, want %q", c.text, got, c.want)
		}
	}
}

func TestUnknownPattern(t *testing.T) {
	if _, ok := splitterFor(`\w+`); ok {
		t.Error(`splitterFor(\w+) claims to know the pattern`)
	}
}
