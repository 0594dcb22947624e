package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/trainer/algo"
)

func TestDefaultsValidate(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
}

// TestDefaultValues checks a sample of the defaults against the values
// written in the issue (the default job's since amendment 9 of
// docs/experiments.md), one of each type.
func TestDefaultValues(t *testing.T) {
	c := Default()
	checks := []struct {
		key       string
		got, want any
	}{
		{"run.name", c.Run.Name, "default"},
		{"run.iterations", c.Run.Iterations, 20},
		{"run.resume", c.Run.Resume, false},
		{"model.tiny.kv_heads", c.Model.Tiny.KVHeads, 2},
		{"model.critic", c.Model.Critic, "separate"},
		{"data.synthetic.test_fraction", c.Data.Synthetic.TestFraction, 0.4},
		{"data.synthetic.fresh_worlds", c.Data.Synthetic.FreshWorlds, true},
		{"tools.enabled", c.Tools.Enabled, []string{"search"}},
		{"data.train", c.Data.Train, []string{}},
		{"env.tool_timeout", c.Env.ToolTimeout, 5 * time.Second},
		{"env.rewards.format", c.Env.Rewards.Format, 0.1},
		{"algorithm.clip_high", c.Algorithm.ClipHigh, 0.28},
		{"algorithm.norm_by_std", c.Algorithm.NormByStd, true},
		{"algorithm.loss_agg", c.Algorithm.LossAgg, "token-mean"},
		{"optim.lr", c.Optim.LR, 1e-4},
		{"optim.eps", c.Optim.Eps, 1e-8},
		{"store.path", c.Store.Path, ""},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v, want %#v", ch.key, ch.got, ch.want)
		}
	}
}

// TestDefaultFreshLists checks that each Default call has its own lists,
// so changing one configuration cannot change another.
func TestDefaultFreshLists(t *testing.T) {
	a, b := Default(), Default()
	a.Tools.Enabled[0] = "calculator"
	if !slices.Equal(b.Tools.Enabled, []string{"search"}) {
		t.Fatalf("second Default sees %v", b.Tools.Enabled)
	}
}

func TestEveryLeafHasDefaultTag(t *testing.T) {
	var c Config
	if err := applyDefaults(&c); err != nil {
		t.Fatal(err)
	}
	for _, k := range leaves(reflect.ValueOf(&c).Elem(), "") {
		if _, ok := k.field.Tag.Lookup("default"); !ok {
			t.Errorf("%s has no default tag", k.path)
		}
	}
}

// The env section is envs.EnvConfig itself: its defaults, read by the
// configuration, are the ones envs.DefaultEnvConfig reads from the same
// tags, and its wiring field (yaml:"-") is no key.
func TestEnvSectionIsTheDomainStruct(t *testing.T) {
	if got, want := Default().Env, envs.DefaultEnvConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("Default().Env = %+v, want envs.DefaultEnvConfig() = %+v", got, want)
	}
	c := Default()
	if err := c.Set("env.external=1"); err == nil {
		t.Error("env.external (a yaml:\"-\" field) accepted as a key")
	}
	if err := c.Set("env.rewards.external.weight=2"); err != nil || c.Env.Rewards.External.Weight != 2 {
		t.Errorf("env.rewards.external.weight=2: err %v, weight %v", err, c.Env.Rewards.External.Weight)
	}
}

// The algorithm section inlines algo.Options: its keys are the section's
// own (algorithm.gamma, never algorithm.options.gamma), with the defaults
// algo.DefaultOptions reads from the same tags.
func TestAlgorithmInlinesTheEstimatorOptions(t *testing.T) {
	c := Default()
	if !reflect.DeepEqual(c.Algorithm.Options, algo.DefaultOptions()) {
		t.Errorf("Default().Algorithm.Options = %+v, want algo.DefaultOptions() = %+v", c.Algorithm.Options, algo.DefaultOptions())
	}
	if err := c.Set("algorithm.gamma=0.9"); err != nil || c.Algorithm.Gamma != 0.9 {
		t.Errorf("algorithm.gamma=0.9: err %v, gamma %v", err, c.Algorithm.Gamma)
	}
	if err := c.Set("algorithm.options={gamma: 0.5}"); err == nil {
		t.Error("algorithm.options accepted as a key")
	}
	y, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), "\n  gamma: 0.9\n") || strings.Contains(string(y), "options") {
		t.Errorf("the algorithm section does not render its options inline:\n%s", y)
	}
}
