package tokenizertest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/agentrl/agentrl/tokenizer"
)

// templateDir writes a word-level tokenizer over the words of texts with
// the special tokens specials, and the published chat template named
// (a file of tokenizer/testdata/templates), into a temporary folder, and
// returns the folder.
func templateDir(t testing.TB, template string, specials []string, texts []string) string {
	t.Helper()
	tok, err := tokenizer.BuildWordLevel(texts, specials)
	if err != nil {
		t.Fatal(err)
	}
	_, here, _, _ := runtime.Caller(0)
	text, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "testdata", "templates", template))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
