package tokenizer

import "testing"

// Qwen3's template rewrites history (env.context defaults to template),
// as does the Qwen3 layout of a word-level tokenizer; Qwen2.5's and Llama
// 3.1's do not.
func TestRewritesHistory(t *testing.T) {
	words, err := BuildWordLevel([]string{"a b"}, []string{"<|im_start|>", "<|im_end|>", "<|endoftext|>"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		tok  *Tokenizer
		want bool
	}{
		{"qwen3", qwen(t), true},
		{"qwen2.5", withTemplate(t, qwen(t), readTestTemplate(t, "qwen2.5-instruct.jinja")), false},
		{"word level", words, true},
		{"llama3.1", llamaWordLevel(t, readTestTemplate(t, "llama3.1-instruct.jinja"), "a b"), false},
	}
	for _, c := range cases {
		f, err := NewChatFormat(c.tok)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := f.RewritesHistory(); got != c.want {
			t.Errorf("%s: RewritesHistory() = %v, want %v", c.name, got, c.want)
		}
	}
}
