package experiment

import (
	"testing"

	"github.com/agentrl/agentrl/trainer/config"
)

// Every row's settings name real keys and give a configuration that
// validates (specConfig validates), and rows have distinct run names. The bf16 rows differ only
// in the correction: off, and token-level truncated IS.
func TestPaperRowsApply(t *testing.T) {
	names := map[string]string{}
	correction := map[string]string{}
	for _, spec := range PaperSpecs {
		if prev, dup := names[runName(spec.Name, 1)]; dup {
			t.Errorf("rows %q and %q share the run name %s", prev, spec.Name, runName(spec.Name, 1))
		}
		names[runName(spec.Name, 1)] = spec.Name
		cfg, err := specConfig(config.Default(), spec, 1, "runs/sft", false)
		if err != nil {
			t.Fatal(err)
		}
		correction[spec.Name] = cfg.RolloutCorrection()
	}
	if correction["GRPO w/ bf16 rollouts"] != "off" || correction["GRPO w/ bf16 rollouts + TIS"] != "tis" || correction["GRPO"] != "off" {
		t.Errorf("corrections of the GRPO rows %v, want off, off and tis", correction)
	}
}
