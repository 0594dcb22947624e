package tokenizertest

import (
	"testing"

	"github.com/agentrl/agentrl/tokenizer"
)

// Gemma4Format is the chat format of a word-level tokenizer over the words
// of texts, with Gemma 4's special tokens and its published E2B chat
// template (tokenizer/testdata/templates).
func Gemma4Format(t testing.TB, texts ...string) *tokenizer.ChatFormat {
	t.Helper()
	dir := templateDir(t, "gemma4-e2b.jinja", []string{"<bos>", "<eos>", "<|turn>", "<turn|>", "<|tool_call>", "<tool_call|>",
		"<|tool_response>", "<tool_response|>", `<|"|>`, "<|tool>", "<tool|>", "<|channel>", "<channel|>"}, texts)
	return formatOf(t, dir)
}
