package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// mcpEntry is an MCP server entry with the given name and url and every
// other key at its default.
func mcpEntry(name, url string) MCPServer {
	return MCPServer{Name: name, URL: url, Args: []string{}, Env: []string{}, Headers: []string{}, Tools: []string{},
		StartTimeout: 30 * time.Second, MaxMessageMB: 16}
}

func TestLoadEntryLists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	doc := `tools:
  mcp:
    - name: fs
      command: npx
      args: [-y, "@modelcontextprotocol/server-filesystem", /data]
      env: [DEBUG=1]
      prefix: fs_
    - name: remote
      url: http://localhost:8000/mcp
      start_timeout: 5s
  http:
    - name: weather
      url: http://localhost:9000/weather
      parameters: '{"type":"object","properties":{"city":{"type":"string"}}}'
env:
  rewards:
    external:
      command: [python3, score.py]
`
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	fs := mcpEntry("fs", "")
	fs.Command, fs.Args, fs.Env, fs.Prefix = "npx", []string{"-y", "@modelcontextprotocol/server-filesystem", "/data"}, []string{"DEBUG=1"}, "fs_"
	remote := mcpEntry("remote", "http://localhost:8000/mcp")
	remote.StartTimeout = 5 * time.Second
	if !reflect.DeepEqual(c.Tools.MCP, []MCPServer{fs, remote}) {
		t.Errorf("tools.mcp %+v", c.Tools.MCP)
	}
	want := []HTTPTool{{Name: "weather", URL: "http://localhost:9000/weather", Headers: []string{},
		Parameters: `{"type":"object","properties":{"city":{"type":"string"}}}`}}
	if !reflect.DeepEqual(c.Tools.HTTP, want) {
		t.Errorf("tools.http %+v", c.Tools.HTTP)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// The effective config reads back the same.
	b, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	back := filepath.Join(t.TempDir(), "back.yaml")
	os.WriteFile(back, b, 0o644)
	c2, err := Load(back)
	if err != nil || !equal(c, c2) {
		t.Fatalf("round trip: %v\n%s", err, b)
	}
}

func TestEntryListErrors(t *testing.T) {
	for _, c := range []struct{ set, want string }{
		{"tools.mcp=[{name: a, comand: x}]", "tools.mcp[0].comand: unknown key"},
		{"tools.mcp=fs", `tools.mcp: want a list of mappings, got "fs"`},
		{"tools.mcp=[fs]", `tools.mcp[0]: want a mapping of keys, got "fs"`},
		{"tools.http=[{name: a, retries: many}]", `tools.http[0].retries: want an integer`},
	} {
		cfg := Default()
		err := cfg.Set(c.set)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.set, err, c.want)
		}
	}
	cfg := Default()
	for _, s := range []string{"tools.mcp=[{name: a}, {name: a, command: x, url: 'http://y', env: [NOEQUALS]}]",
		"tools.http=[{name: h, url: ftp://x, headers: [bad]}]", "env.rewards.external.command=[x]",
		"env.rewards.external.url=http://x", "tools.code.memory_mb=0"} {
		if err := cfg.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	err := cfg.Validate()
	for _, want := range []string{
		"tools.mcp[0]: give exactly one of command (stdio) and url", `tools.mcp[1].name: "a" is used twice`,
		"tools.mcp[1]: give exactly one of", `tools.mcp[1].env: "NOEQUALS", want KEY=VALUE`,
		`tools.http[0].url: "ftp://x", want an http://`, `tools.http[0].headers: "bad"`,
		"env.rewards.external: give a command or a url, not both", "tools.code.memory_mb",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate: %v\nwant %q", err, want)
		}
	}
}
