package config

import (
	"slices"
	"testing"
)

// Each rule of model.lora, broken alone on a LoRA config (rank 16,
// all-linear), is reported once, naming its key.
func TestValidateLoRANamesTheKey(t *testing.T) {
	cases := []brokenRule{
		{"model.lora.rank", func(c *Config) { c.Model.LoRA.Rank = -1 }, "want at least 0"},
		{"model.lora.alpha", func(c *Config) { c.Model.LoRA.Alpha = 0 }, "want > 0"},
		{"model.lora.dropout", func(c *Config) { c.Model.LoRA.Dropout = 1 }, "want in [0, 1)"},
		{"model.lora.dropout", func(c *Config) { c.Model.LoRA.Dropout = -0.1 }, "want in [0, 1)"},
		{"model.lora.dropout", func(c *Config) { c.Model.LoRA.Dropout, c.Model.Checkpointing = 0.05, true }, "another dropout mask"},
		{"model.lora.target_modules", func(c *Config) { c.Model.LoRA.TargetModules = []string{"qkv_proj"} }, `"qkv_proj" is not a projection`},
		{"model.lora.target_modules", func(c *Config) { c.Model.LoRA.TargetModules = []string{"lm_head"} }, `"lm_head" is not a projection`},
		{"model.lora.target_modules", func(c *Config) { c.Model.LoRA.TargetModules = []string{"q_proj", "q_proj"} }, "listed twice"},
		{"model.lora.target_modules", func(c *Config) { c.Model.LoRA.TargetModules = []string{"all-linear", "q_proj"} }, "list it alone"},
		{"model.lora.target_modules", func(c *Config) { c.Model.LoRA.TargetModules = nil }, "empty"},
		{"model.lora.path", func(c *Config) { c.Model.LoRA.Rank, c.Model.LoRA.Path = 0, "adapter" }, "model.lora.rank is 0"},
		{"model.lora.merge", func(c *Config) { c.Model.LoRA.Rank, c.Model.LoRA.Merge = 0, true }, "no adapters to merge"},
		{"model.lora.path", func(c *Config) {
			c.Model.LoRA.Path, c.SFT.Data, c.Data.Synthetic.FreshWorlds = "adapter", "demos.jsonl", false
		}, "the warm start trains the base"},
		{"model.ref_path", func(c *Config) { c.Model.RefPath = "ref" }, "the base model itself"},
		{"model.critic_path", func(c *Config) { c.Model.CriticPath = "critic" }, "second adapter set"},
		{"rollout.dtype", func(c *Config) { c.Rollout.DType = "bf16" }, "merged weights"},
	}
	checkBrokenRules(t, func() Config {
		c := Default()
		c.Model.LoRA.Rank = 16
		return c
	}, cases)
}

// LoRA is off by default; a LoRA config with the defaults (all-linear),
// dropout and a subset of targets is valid.
func TestLoRADefaultsAndTargets(t *testing.T) {
	c := Default()
	if c.Model.LoRA.On() {
		t.Fatalf("LoRA on by default: %+v", c.Model.LoRA)
	}
	c.Model.LoRA.Rank, c.Model.LoRA.Dropout = 8, 0.05
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// Every projection a layer may have (a model keeps those it has).
	if got := c.Model.LoRA.Targets(); !slices.Equal(got, []string{"q_proj", "k_proj", "v_proj", "o_proj",
		"in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj", "gate_proj", "up_proj", "down_proj", "in_proj",
		"per_layer_input_gate", "per_layer_projection", "per_layer_model_projection"}) {
		t.Errorf("all-linear gives %v", got)
	}
	// Listed in any order, returned in a layer's order.
	c.Model.LoRA.TargetModules = []string{"v_proj", "down_proj", "out_proj", "q_proj", "in_proj_qkv"}
	if got := c.Model.LoRA.Targets(); !slices.Equal(got, []string{"q_proj", "v_proj", "in_proj_qkv", "out_proj", "down_proj"}) {
		t.Errorf("targets %v, want q_proj v_proj in_proj_qkv out_proj down_proj", got)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
