package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestYAMLRoundTrip renders a configuration with non-default values of
// every type and reads it back with Load.
func TestYAMLRoundTrip(t *testing.T) {
	c := Default()
	c.Run.Name, c.Run.Resume = "round: trip #1", true // needs quoting in YAML
	c.Data.Train, c.Data.Eval = []string{"a b.jsonl", "c,d.jsonl"}, []string{}
	c.Env.ToolTimeout = 1500 * time.Millisecond
	c.Optim.LR, c.Algorithm.Eps = 3e-7, 1e-12
	c.Env.Rewards.InvalidCall = -0.05
	c.Tools.Enabled = []string{"search", "calculator"}
	c.Model.Path = "yes" // a YAML 1.1 bool, must stay a string
	for _, cfg := range []Config{Default(), c} {
		out, err := cfg.YAML()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		back, err := Load(path)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !equal(back, cfg) {
			t.Fatalf("round trip changed the config:\n%s\ngot  %+v\nwant %+v", out, back, cfg)
		}
	}
}

func TestYAMLLooksLikeAConfigFile(t *testing.T) {
	out, err := Default().YAML() // a value receiver: callable on a returned Config
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"run:\n  name: default\n", "  tool_timeout: 5s\n", "  enabled:\n    - search\n", "  clip_high: 0.28\n"} {
		if !strings.Contains(string(out), line) {
			t.Errorf("YAML lacks %q:\n%s", line, out)
		}
	}
}
