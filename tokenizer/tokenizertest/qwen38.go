package tokenizertest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agentrl/agentrl/tokenizer"
)

// Qwen38Dir writes a word-level tokenizer over the words of texts, with
// Qwen's special tokens, and Qwen3.8's published chat template
// (tokenizer/testdata/templates) into a temporary folder, and returns the
// folder.
func Qwen38Dir(t testing.TB, texts ...string) string {
	t.Helper()
	tok, err := tokenizer.BuildWordLevel(texts, tokenizer.QwenSpecials)
	if err != nil {
		t.Fatal(err)
	}
	_, here, _, _ := runtime.Caller(0)
	template, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "testdata", "templates", "qwen3.8.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), template, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
