package config

import (
	"slices"
	"strings"
)

// LoRATargets are the projection names model.lora.target_modules may list,
// in a layer's order: torch.LoRATargets (this package builds without
// libtorch, so it keeps its own copy; a trainer test checks they agree).
var LoRATargets = []string{"q_proj", "k_proj", "v_proj", "o_proj",
	"in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj",
	"gate_proj", "up_proj", "down_proj", "in_proj",
	"per_layer_input_gate", "per_layer_projection", "per_layer_model_projection"}

// AllLinear is PEFT's name for every linear projection but the LM head.
const AllLinear = "all-linear"

// On reports whether the run trains adapters (model.lora.rank > 0).
func (l LoRAConfig) On() bool { return l.Rank > 0 }

// Targets are the projections named, in LoRATargets order: all of them
// for all-linear, of which a model has those its layers have
// (torch.Config.AllLinear: a Gated DeltaNet layer's only in Qwen3.5).
func (l LoRAConfig) Targets() []string {
	if slices.Contains(l.TargetModules, AllLinear) {
		return slices.Clone(LoRATargets)
	}
	var out []string
	for _, t := range LoRATargets {
		if slices.Contains(l.TargetModules, t) {
			out = append(out, t)
		}
	}
	return out
}

// validateLoRA checks model.lora's ranges and names, and the settings a
// LoRA run cannot honour.
func (c *Config) validateLoRA(p *problems) {
	l := c.Model.LoRA
	p.atLeast("model.lora.rank", l.Rank, 0)
	if !l.On() {
		if l.Path != "" {
			p.add("model.lora.path", "%q, but model.lora.rank is 0 (LoRA off): set model.lora.rank to the adapter's r", l.Path)
		}
		if l.Merge {
			p.add("model.lora.merge", "true, but model.lora.rank is 0 (LoRA off): there are no adapters to merge")
		}
		return
	}
	p.positive("model.lora.alpha", l.Alpha)
	if l.Dropout < 0 || l.Dropout >= 1 {
		p.add("model.lora.dropout", "%v, want in [0, 1)", l.Dropout)
	}
	if len(l.TargetModules) == 0 {
		p.add("model.lora.target_modules", "empty, want %s or some of %s", AllLinear, strings.Join(LoRATargets, ", "))
	}
	for i, t := range l.TargetModules {
		switch {
		case t == AllLinear && len(l.TargetModules) > 1:
			p.add("model.lora.target_modules", "%s names every projection: list it alone", AllLinear)
		case t != AllLinear && !slices.Contains(LoRATargets, t):
			p.add("model.lora.target_modules", "%q is not a projection an adapter can sit on, want %s or some of %s", t, AllLinear, strings.Join(LoRATargets, ", "))
		case slices.Contains(l.TargetModules[:i], t):
			p.add("model.lora.target_modules", "%q is listed twice", t)
		}
	}
	// The recomputed forward would draw another dropout mask than the
	// forward whose activations it replaces: the gradient would be wrong.
	if l.Dropout > 0 && c.Model.Checkpointing {
		p.add("model.lora.dropout", "%v with model.checkpointing: the recomputation in the backward pass would draw another dropout mask; set the dropout to 0 or checkpointing off", l.Dropout)
	}
	if c.Model.RefPath != "" {
		p.add("model.ref_path", "%q, but with model.lora the KL reference is the base model itself (the adapters off)", c.Model.RefPath)
	}
	if c.Model.CriticPath != "" {
		p.add("model.critic_path", "%q, but with model.lora a separate critic is a second adapter set over the same base", c.Model.CriticPath)
	}
	if r := c.Rollout.DType; r != "auto" && r != c.Device.DType {
		p.add("rollout.dtype", "%s, but with model.lora the rollouts decode from the merged weights, in device.dtype %s: use auto", r, c.Device.DType)
	}
	if l.Path != "" && c.SFT.Data != "" {
		p.add("model.lora.path", "%q with sft.data: the warm start trains the base, under an adapter that was trained on the unchanged one", l.Path)
	}
}
