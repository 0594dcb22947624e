package reward

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestProcess(t *testing.T) {
	c := DefaultConfig()
	c.ValidCall, c.Support, c.InvalidCall, c.RepeatCall = 0.02, 0.05, -0.05, -0.05
	cases := []struct {
		f    TurnFacts
		want float64
	}{
		{TurnFacts{}, 0},
		{TurnFacts{Valid: 1}, 0.02},
		{TurnFacts{Valid: 3}, 0.02},                   // once per turn
		{TurnFacts{Valid: 2, NewSupport: 1}, 0.07},    // 0.02 + 0.05
		{TurnFacts{Invalid: 1, Repeated: 1}, -0.1},    // -0.05 - 0.05
		{TurnFacts{Valid: 1, Invalid: 1}, -0.03},      // 0.02 - 0.05
		{TurnFacts{Repeated: 2, NewSupport: 0}, -0.1}, // a repeat earns no valid credit
	}
	for _, tc := range cases {
		if got := c.Process(tc.f); !near(got, tc.want) {
			t.Errorf("Process(%+v) = %v, want %v", tc.f, got, tc.want)
		}
	}
}

func TestMatchSupport(t *testing.T) {
	refs := []string{"eiffel tower ", "Paris", "Gustave Eiffel"}
	support := []string{"Eiffel Tower", "Louvre", "Gustave Eiffel", "EIFFEL TOWER"}
	got := MatchSupport(refs, support)
	want := []string{"Eiffel Tower", "Gustave Eiffel"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("MatchSupport = %q, want %q", got, want)
	}
	if got := MatchSupport(nil, support); len(got) != 0 {
		t.Errorf("no refs matched %q", got)
	}
}

func TestConfigYAMLOverridesDefaults(t *testing.T) {
	c := DefaultConfig()
	if err := yaml.Unmarshal([]byte("scorer: f1\nformat: 0\nrepeat_call: -0.2\n"), &c); err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.Scorer, want.Format, want.RepeatCall = "f1", 0, -0.2
	if !reflect.DeepEqual(c, want) {
		t.Errorf("decoded %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
}

func TestDefaultConfig(t *testing.T) {
	want := Config{Scorer: "em", Outcome: 1, Format: 0.1,
		External: External{Command: []string{}, Timeout: 10 * time.Second, Weight: 1, MaxOutputMB: 1}}
	if got := DefaultConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultConfig = %+v, want %+v", got, want)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
	bad := DefaultConfig()
	bad.Scorer = "accuracy"
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "accuracy") {
		t.Errorf("unknown scorer: err = %v", err)
	}
	bad = DefaultConfig()
	bad.Support = math.Inf(1)
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "support") {
		t.Errorf("infinite weight: err = %v", err)
	}
	bad = DefaultConfig()
	bad.External.Weight = math.NaN()
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "external.weight") {
		t.Errorf("NaN external weight: err = %v", err)
	}
}
