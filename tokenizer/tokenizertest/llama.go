// Package tokenizertest makes tokenizer folders for the tests of other
// packages.
package tokenizertest

import (
	"testing"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/toolcall"
)

// LlamaDir writes a word-level tokenizer over the words of texts, with
// Llama 3's special tokens, and Llama 3.2-Instruct's published chat
// template (tokenizer/testdata/templates) into a temporary folder, and
// returns the folder.
func LlamaDir(t testing.TB, texts ...string) string {
	t.Helper()
	return templateDir(t, "llama3.2-instruct.jinja", []string{"<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
		"<|end_header_id|>", toolcall.LlamaEOT, toolcall.LlamaEOM, toolcall.LlamaPythonTag}, texts)
}

// LlamaFormat is the chat format of LlamaDir's folder: Llama 3.2's.
func LlamaFormat(t testing.TB, texts ...string) *tokenizer.ChatFormat {
	t.Helper()
	return formatOf(t, LlamaDir(t, texts...))
}

// formatOf is the chat format of the tokenizer folder dir.
func formatOf(t testing.TB, dir string) *tokenizer.ChatFormat {
	t.Helper()
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, err := tokenizer.NewChatFormat(tok)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
