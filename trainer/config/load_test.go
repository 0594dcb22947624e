package config

import (
	"errors"
	"slices"
	"testing"
	"time"
)

func TestLoadOverridesSomeKeys(t *testing.T) {
	path := writeFile(t, `# a comment
run:
  name: exp1
  iterations: 5
algorithm:
  estimator: gae
  clip_high: 0.3
  norm_by_std: false
env:
  tool_timeout: 250ms
  rewards:
    invalid_call: -0.05
data:
  source: files
  train: [a.jsonl, b.jsonl]
  eval:
    - c.jsonl
model:
  tiny: {layers: 3}
`)
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Run.Name, want.Run.Iterations = "exp1", 5
	want.Algorithm.Estimator, want.Algorithm.ClipHigh, want.Algorithm.NormByStd = "gae", 0.3, false
	want.Env.ToolTimeout = 250 * time.Millisecond
	want.Env.Rewards.InvalidCall = -0.05
	want.Data.Source, want.Data.Train, want.Data.Eval = "files", []string{"a.jsonl", "b.jsonl"}, []string{"c.jsonl"}
	want.Model.Tiny.Layers = 3
	if !equal(c, want) {
		t.Fatalf("loaded\n%+v\nwant\n%+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestLoadUnknownKeyDeep(t *testing.T) {
	// line 1 env:, 2 max_turns, 3 rewards:, 4 the misspelt key
	path := writeFile(t, "env:\n  max_turns: 3\n  rewards:\n    formt: 0.2\n")
	_, err := Load(path)
	wantErr(t, err, path, "line 4", "env.rewards.formt", "unknown key", "did you mean env.rewards.format")
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Line != 4 || ke.Path != "env.rewards.formt" {
		t.Fatalf("KeyError = %+v", ke)
	}
}

func TestLoadUnknownSection(t *testing.T) {
	_, err := Load(writeFile(t, "run:\n  seed: 2\nalgo:\n  gamma: 1\n"))
	wantErr(t, err, "line 3", "algo: unknown key (did you mean algorithm?)")
}

func TestLoadTypeErrors(t *testing.T) {
	cases := []struct {
		yaml  string
		parts []string
	}{
		// a string for a float, on line 3
		{"run:\n  seed: 1\nalgorithm:\n  clip_high: abc\n", []string{"line 4", "algorithm.clip_high", `want a float, got "abc"`}},
		// a quoted number is a string, not a float
		{"optim:\n  lr: \"1e-4\"\n", []string{"line 2", "optim.lr", "want a float"}},
		{"run:\n  iterations: 2.5\n", []string{"line 2", "run.iterations", "want an integer"}},
		{"run:\n  resume: maybe\n", []string{"line 2", "run.resume", "want a bool"}},
		{"env:\n  tool_timeout: 5\n", []string{"line 2", "env.tool_timeout", "want a duration"}},
		{"run:\n  name: [a, b]\n", []string{"line 2", "run.name", "want a string, got a list"}},
		{"data:\n  train: [a, [b]]\n", []string{"line 2", "data.train", "want a list of strings"}},
		{"model: 3\n", []string{"line 1", "model", "want a mapping"}},
		{"run:\n  seed:\n", []string{"line 2", "run.seed", "got null"}},
		{"- 1\n- 2\n", []string{"line 1", "(top level)", "want a mapping"}},
	}
	for _, tc := range cases {
		_, err := Load(writeFile(t, tc.yaml))
		wantErr(t, err, tc.parts...)
	}
}

func TestLoadEdgeCases(t *testing.T) {
	// an empty file and an empty section keep the defaults
	for _, text := range []string{"", "# nothing\n", "model:\n", "tools:\n  calculator: {}\n"} {
		c, err := Load(writeFile(t, text))
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if !equal(c, Default()) {
			t.Errorf("%q changed the defaults", text)
		}
	}
	// null empties a list or a string
	c, err := Load(writeFile(t, "tools:\n  enabled:\nrun:\n  dir: ~\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Tools.Enabled == nil || len(c.Tools.Enabled) != 0 || c.Run.Dir != "" {
		t.Errorf("enabled %#v dir %q", c.Tools.Enabled, c.Run.Dir)
	}
	// a single scalar is a list of one
	c, err = Load(writeFile(t, "data:\n  train: one.jsonl\n"))
	if err != nil || !slices.Equal(c.Data.Train, []string{"one.jsonl"}) {
		t.Errorf("train %v, err %v", c.Data.Train, err)
	}
	_, err = Load(writeFile(t, "run:\n  seed: 1\n---\nrun:\n  seed: 2\n"))
	wantErr(t, err, "one YAML document")
	_, err = Load(writeFile(t, "run:\n  seed: 1\n  seed: 2\n"))
	wantErr(t, err, "line 3", "seed")
	_, err = Load(writeFile(t, "run: [\n"))
	wantErr(t, err, "cfg.yaml")
	_, err = Load("/nonexistent/cfg.yaml")
	wantErr(t, err, "/nonexistent/cfg.yaml")
}

func TestMergeLeavesConfigOnError(t *testing.T) {
	c := Default()
	err := c.Merge(writeFile(t, "run:\n  seed: 9\n  bogus: 1\n"))
	wantErr(t, err, "run.bogus")
	if c.Run.Seed != 1 {
		t.Fatalf("seed %d after a failed merge, want the default 1", c.Run.Seed)
	}
}
