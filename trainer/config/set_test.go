package config

import (
	"slices"
	"testing"
	"time"
)

func TestSet(t *testing.T) {
	c := Default()
	for _, expr := range []string{
		"algorithm.clip_high=0.3",
		"run.iterations = 7",
		"run.resume=true",
		"env.tool_timeout=1m30s",
		"data.train=[x.jsonl, y.jsonl]",
		"tools.enabled=search,calculator", // a scalar: one item, commas and all
		"model.tiny={hidden: 64, heads: 2}",
		"store.path=",
		"run.name=a=b", // only the first = separates key and value
	} {
		if err := c.Set(expr); err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
	}
	if c.Algorithm.ClipHigh != 0.3 || c.Run.Iterations != 7 || !c.Run.Resume {
		t.Errorf("scalars: clip_high %v iterations %d resume %v", c.Algorithm.ClipHigh, c.Run.Iterations, c.Run.Resume)
	}
	if c.Env.ToolTimeout != 90*time.Second {
		t.Errorf("tool_timeout %v, want 1m30s", c.Env.ToolTimeout)
	}
	if !slices.Equal(c.Data.Train, []string{"x.jsonl", "y.jsonl"}) || !slices.Equal(c.Tools.Enabled, []string{"search,calculator"}) {
		t.Errorf("lists: train %q enabled %q", c.Data.Train, c.Tools.Enabled)
	}
	// a section merges: keys not named keep their value
	if c.Model.Tiny.Hidden != 64 || c.Model.Tiny.Heads != 2 || c.Model.Tiny.Layers != 2 {
		t.Errorf("tiny %+v", c.Model.Tiny)
	}
	if c.Store.Path != "" || c.Run.Name != "a=b" {
		t.Errorf("store.path %q run.name %q", c.Store.Path, c.Run.Name)
	}
}

func TestSetErrors(t *testing.T) {
	cases := []struct {
		expr  string
		parts []string
	}{
		{"algorithm.clip_hihg=0.3", []string{"algorithm.clip_hihg", "unknown key", "did you mean algorithm.clip_high"}},
		// only the last name is right: the full path is suggested
		{"clip_low=0.1", []string{"did you mean algorithm.clip_low"}},
		{"nothing.like.it=1", []string{"nothing.like.it: unknown key"}},
		{"algorithm.clip_high=abc", []string{"algorithm.clip_high", `want a float, got "abc"`}},
		{"run.seed=[1]", []string{"run.seed", "want an integer, got a list"}},
		{"model.tiny={hidden: 64, wide: 2}", []string{"model.tiny.wide: unknown key"}},
		{"algorithm.clip_high", []string{"want key=value"}},
		{"=3", []string{"want key=value"}},
		{"run.name=[", []string{"run.name", "not YAML"}},
	}
	for _, tc := range cases {
		c := Default()
		err := c.Set(tc.expr)
		wantErr(t, err, tc.parts...)
		if !equal(c, Default()) {
			t.Errorf("%s: failed Set changed the config", tc.expr)
		}
	}
}
