package envs

import (
	"reflect"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs/reward"
	"gopkg.in/yaml.v3"
)

func TestEnvConfigYAML(t *testing.T) {
	c := DefaultEnvConfig()
	doc := "max_turns: 3\ntool_timeout: 1500ms\nrewards:\n  scorer: f1\n  support: 0.1\n"
	if err := yaml.Unmarshal([]byte(doc), &c); err != nil {
		t.Fatal(err)
	}
	want := DefaultEnvConfig()
	want.MaxTurns, want.ToolTimeout = 3, 1500*time.Millisecond
	want.Rewards.Scorer, want.Rewards.Support = "f1", 0.1
	if !reflect.DeepEqual(c, want) {
		t.Errorf("decoded %+v, want %+v", c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
	if err := DefaultEnvConfig().Validate(); err != nil {
		t.Errorf("defaults rejected: %v", err)
	}
}

func TestDefaultEnvConfig(t *testing.T) {
	got := DefaultEnvConfig()
	if got.MaxTurns != 4 || got.MaxTokens != 768 || got.MaxTurnTokens != 48 || got.ToolTimeout != 5*time.Second ||
		got.MaxObservationChars != 600 || !reflect.DeepEqual(got.Rewards, reward.DefaultConfig()) || got.External.Scorer != nil {
		t.Errorf("DefaultEnvConfig = %+v, want 4 turns, 768 tokens, 48 per turn, 5s, 600 characters, reward.DefaultConfig", got)
	}
}
