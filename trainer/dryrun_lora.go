package trainer

import (
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/config"
)

// projection is the input and output width of a target projection of c.
func projection(c torch.Config, target string) (in, out int64) {
	h, i := int64(c.Hidden), int64(c.Intermediate)
	q, kv := int64(c.Heads*c.HeadDim), int64(c.KVHeads*c.HeadDim)
	switch target {
	case "q_proj":
		return h, q
	case "k_proj", "v_proj":
		return h, kv
	case "o_proj":
		return q, h
	case "gate_proj", "up_proj":
		return h, i
	case "down_proj":
		return i, h
	}
	return 0, 0
}

// loraCounts are, over every layer of c, the adapters' parameters
// (r (in + out) per target) and the target weights' (in out per target).
func loraCounts(c torch.Config, rank int, targets []string) (adapters, weights int64) {
	for _, t := range targets {
		in, out := projection(c, t)
		adapters += int64(rank) * (in + out)
		weights += in * out
	}
	return adapters * int64(c.Layers), weights * int64(c.Layers)
}

// loraMemory is the estimate with model.lora, over the full fine-tune's
// activations and KV cache: the base's weights once in their dtype (b
// bytes a number; policy, reference and critic share them); the policy's
// adapters (and a shared value head) in f32 with their gradients and two
// AdamW moments; a separate critic's adapters and value head likewise;
// no reference copy; and the merged decode model's copy of the target
// weights in the base's dtype (its other weights are the base's).
func loraMemory(m *MemoryEstimate, c torch.Config, cfg config.Config, params, b int64) {
	l := cfg.Model.LoRA
	adapters, targets := loraCounts(c, l.Rank, l.Targets())
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
	if est.Critic && cfg.Model.Critic == "separate" {
		m.Critic = 4 * (adapters + head) * 4
	}
	m.Merged = targets * b
}
