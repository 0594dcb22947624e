package tokenizertest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/tokenizer"
)

// Gemma4Dir writes a word-level tokenizer over the words of texts, with
// Gemma 4's special tokens and "<bos>" its bos_token (which the template
// writes first), and its published E2B chat template
// (tokenizer/testdata/templates) into a temporary folder, and returns the
// folder.
func Gemma4Dir(t testing.TB, texts ...string) string {
	t.Helper()
	dir := templateDir(t, "gemma4-e2b.jinja", []string{"<bos>", "<eos>", "<|turn>", "<turn|>", "<|tool_call>", "<tool_call|>",
		"<|tool_response>", "<tool_response|>", `<|"|>`, "<|tool>", "<tool|>", "<|channel>", "<channel|>"}, texts)
	path := filepath.Join(dir, "tokenizer_config.json")
	var config map[string]any
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &config)
	}
	if err != nil {
		t.Fatal(err)
	}
	config["bos_token"] = "<bos>"
	if b, err = json.Marshal(config); err == nil {
		err = os.WriteFile(path, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// Gemma4Format is the chat format of Gemma4Dir's folder: Gemma 4's.
func Gemma4Format(t testing.TB, texts ...string) *tokenizer.ChatFormat {
	t.Helper()
	return formatOf(t, Gemma4Dir(t, texts...))
}
