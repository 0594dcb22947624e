package config

import (
	"os"
	"path/filepath"
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

// The README's worked example of external tools is a valid config.
func TestReadmeToolsExampleIsValid(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Skip("README.md not found beside the module")
	}
	_, after, ok := strings.Cut(string(readme), "### A worked example\n")
	_, block, ok2 := strings.Cut(after, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no yaml block under \"### A worked example\"")
	}
	path := filepath.Join(t.TempDir(), "tools.yaml")
	if err := os.WriteFile(path, []byte(block), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.Tools.MCP) != 3 || len(c.Tools.HTTP) != 1 || len(c.Env.Rewards.External.Command) == 0 {
		t.Fatalf("the example lost its servers, tools or reward: %+v", c.Tools)
	}
}
