package dryrun

import (
	"strings"

	"github.com/agentrl/agentrl/torch"
)

// MemoryEstimate is a rough device-memory budget in bytes. KVCache is the
// decode engine's key/value cache of the attention layers, DeltaNetState
// its conv and recurrent states of the Gated DeltaNet layers (Qwen3.5),
// which hold those instead (memory.DecodeState). Merged is the LoRA decode
// model's copy of the target weights (0 without LoRA). Checkpoint is the
// host memory a checkpoint holds while it is written (checkpointBytes);
// Total counts it on the CPU, where host memory is the device's.
type MemoryEstimate struct {
	Weights, Grads, Optimizer, Reference, Critic, KVCache, DeltaNetState, Activations, Merged, Checkpoint, Total int64
}

// paramCount is the number of weights of a model with these parameters.
func paramCount(shapes []torch.ParamShape) int64 {
	var n int64
	for _, p := range shapes {
		n += p.Numel()
	}
	return n
}

// activeParams is the parameters of shapes one token of a model of c
// runs through: all but, in each sparse layer, experts - top-k of its
// experts (each expert's parameters are mlp.experts.{e}.*, Nemotron-H's
// mixer.experts.{e}.*, the same number for every expert; Gemma 4's are
// its layers' experts.gate_up_proj and experts.down_proj, every expert's).
func activeParams(c torch.Config, shapes []torch.ParamShape) int64 {
	var all, experts int64
	for _, p := range shapes {
		all += p.Numel()
		if strings.Contains(p.Name, ".experts.") { // mlp.experts.{e}.*, mixer.experts.{e}.*, Gemma 4's fused experts.*
			experts += p.Numel()
		}
	}
	if e := int64(c.MoE.Experts); e > 0 {
		all -= experts / e * (e - int64(c.MoE.ExpertsPerToken))
	}
	return all
}

// checkpointBytes is the host memory a checkpoint holds at once beside
// the update's (rank 0's, models.Set.Checkpoint) for trained parameters, the
// largest of them largest elements, in a model of b bytes a weight.
// AdamW's state is 8 f32 bytes a parameter (its two moments), 12 with
// the master weights of a bf16/f16 parameter (b < 4). Without ZeRO it is
// written one parameter at a time: the largest parameter's state copied
// out of the optimizer, and its f32 bytes in Go. With ZeRO (sharded) it is
// gathered whole first and held while the weights are written, one tensor
// at a time (the largest's bytes). eagerWeights is a PEFT adapter folder's
// bytes, written whole before the optimizer state.
func checkpointBytes(trained, largest, eagerWeights, b int64, sharded bool) int64 {
	opt := int64(8)
	if b < 4 {
		opt = 12
	}
	if sharded {
		return trained*opt + max(eagerWeights, largest*b)
	}
	return max(eagerWeights, largest*(opt+4))
}

// largestParam is the element count of the largest of the parameters.
func largestParam(shapes []torch.ParamShape) int64 {
	var n int64
	for _, p := range shapes {
		n = max(n, p.Numel())
	}
	return n
}
