package tokenizertest

import (
	"testing"

	"github.com/agentrl/agentrl/tokenizer"
)

// Qwen38Dir writes a word-level tokenizer over the words of texts, with
// Qwen's special tokens, and Qwen3.8's published chat template
// (tokenizer/testdata/templates) into a temporary folder, and returns the
// folder.
func Qwen38Dir(t testing.TB, texts ...string) string {
	t.Helper()
	return templateDir(t, "qwen3.8.jinja", tokenizer.QwenSpecials, texts)
}
