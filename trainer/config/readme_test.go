package config

import (
	"os"
	"strings"
	"testing"
)

// The README's configuration table is MarkdownTable's output, so the keys,
// defaults and docs it lists cannot drift from the code.
func TestReadmeTableIsCurrent(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Skip("README.md not found beside the module")
	}
	if !strings.Contains(string(readme), strings.TrimSpace(MarkdownTable())) {
		t.Fatal("README.md's configuration table is stale: replace it with `trainer config print --markdown`")
	}
}
