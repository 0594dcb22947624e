package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// configDoc is the configuration page, relative to this package.
const configDoc = "../../docs/configuration.md"

// readConfigDoc reads docs/configuration.md, or skips the test when the
// package is built outside the repository (no docs beside it).
func readConfigDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(configDoc)
	if err != nil {
		t.Skipf("docs/configuration.md not found beside the module (%v): nothing to compare", err)
	}
	return string(b)
}

// docs/configuration.md's table of every key is MarkdownTable's output, so
// the keys, defaults and docs it lists cannot drift from the code.
func TestConfigDocTableIsCurrent(t *testing.T) {
	if !strings.Contains(readConfigDoc(t), strings.TrimSpace(MarkdownTable())) {
		t.Fatal("docs/configuration.md's table of keys is stale: replace it with `trainer config print --markdown`")
	}
}

// docs/configuration.md's worked example of external tools is a valid
// config.
func TestConfigDocToolsExample(t *testing.T) {
	_, after, ok := strings.Cut(readConfigDoc(t), "\n## A worked example\n")
	_, block, ok2 := strings.Cut(after, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/configuration.md has no yaml block under \"## A worked example\"")
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
