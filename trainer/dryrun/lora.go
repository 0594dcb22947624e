package dryrun

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/config"
)

// loraCounts are, over every layer, the adapters' parameters (r (in +
// out) per target) and the target weights' (in out per target), for the
// model parameters shapes: a target's weights are the
// model.layers.{i}.*.{target}.weight of shape [out, in].
func loraCounts(shapes []torch.ParamShape, rank int, targets []string) (adapters, weights int64) {
	for _, p := range shapes {
		for _, t := range targets {
			if strings.HasSuffix(p.Name, "."+t+".weight") && len(p.Shape) == 2 {
				out, in := p.Shape[0], p.Shape[1]
				adapters += int64(rank) * (in + out)
				weights += in * out
			}
		}
	}
	return adapters, weights
}

// checkLoRATargets refuses, as the model does when the adapters are made,
// the MLP targets of a model with mixture-of-experts layers (its sparse
// layers' MLPs are experts, and a shared expert, which take no adapters)
// and a target no layer of the model has (in_proj_qkv, a Gated DeltaNet
// layer's, on a Qwen3).
func checkLoRATargets(c torch.Config, targets []string) error {
	for _, t := range targets {
		if c.Sparse() && (t == "gate_proj" || t == "up_proj" || t == "down_proj") {
			return fmt.Errorf("model.lora.target_modules: %s is not supported on a model with mixture-of-experts layers: "+
				"LoRA on the experts (mlp.experts.*, mlp.shared_expert.*) is not implemented; target q_proj, k_proj, v_proj, o_proj", t)
		}
		if why := c.LoRARefused(t); why != "" {
			return fmt.Errorf("model.lora.target_modules: %s", why)
		}
		if len(c.LoRALayers(t)) == 0 {
			return fmt.Errorf("model.lora.target_modules: %s: no layer of the model has %s", t, c.LoRAModule(t))
		}
	}
	return nil
}

// loraTargets are the projections model.lora adapts on a model of c:
// all-linear is those c has.
func loraTargets(c torch.Config, l config.LoRAConfig) []string {
	if slices.Contains(l.TargetModules, config.AllLinear) {
		return c.AllLinear()
	}
	return l.Targets()
}

// loraMemory is the estimate with model.lora, over the full fine-tune's
// activations and KV cache: the base's weights once in their dtype (b
// bytes a number; policy, reference and critic share them); the policy's
// adapters (and a shared value head) in f32 with their gradients and two
// AdamW moments; a separate critic's adapters and value head likewise;
// no reference copy; and the merged decode model's copy of the target
// weights in the base's dtype (its other weights are the base's).
func loraMemory(m *MemoryEstimate, c torch.Config, shapes []torch.ParamShape, cfg config.Config, params, b int64, sharded bool) {
	l := cfg.Model.LoRA
	adapters, targets := loraCounts(shapes, l.Rank, loraTargets(c, l))
	head := int64(c.Hidden + 1)
	est, _ := algo.Get(cfg.Algorithm.Estimator)
	policy := adapters
	if est.Critic && cfg.Model.Critic == "shared" {
		policy += head
	}
	m.Weights = params*b + policy*4
	m.Grads = policy * 4
	m.Optimizer = 2 * policy * 4
	m.Reference = 0
	m.Critic = 0
	trained := policy
	if est.Critic && cfg.Model.Critic == "separate" {
		m.Critic = 4 * (adapters + head) * 4
		trained += adapters + head
	}
	m.Merged = targets * b
	// A checkpoint writes the policy's adapters in f32 as a PEFT folder,
	// whole; then the f32 state of the adapters (and heads), one adapter's
	// at a time (far less than all of them: left out) unless sharded.
	m.Checkpoint = checkpointBytes(trained, 0, policy*4, 4, sharded)
}
