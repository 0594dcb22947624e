package envs

import (
	"reflect"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func TestEnvConfigYAML(t *testing.T) {
	c := DefaultEnvConfig()
	doc := "max_turns: 4\ntool_timeout: 1500ms\nrewards:\n  scorer: f1\n  support: 0.1\n"
	if err := yaml.Unmarshal([]byte(doc), &c); err != nil {
		t.Fatal(err)
	}
	want := DefaultEnvConfig()
	want.MaxTurns, want.ToolTimeout = 4, 1500*time.Millisecond
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
