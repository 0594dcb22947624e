package memory

import "github.com/agentrl/agentrl/torch"

// TrainingState is the gradients and the optimizer state one rank holds
// for params parameters of b bytes each. Whole: the gradients in the
// parameters' dtype, plus the f32 accumulator of a bf16/f16 parameter
// (b < 4); AdamW's two f32 moments, plus the f32 master weights of a
// bf16/f16 parameter. With ZeRO over world ranks a rank holds its share of
// the flat vector padded to a multiple of world, ceil(params/world)
// elements: of the optimizer state from stage 1, of the gradients too from
// stage 2 (as DeepSpeed counts; this trainer's stage 2 still sums a step's
// micro-batch gradients whole before the reduce-scatter, see
// docs/distributed.md).
func TrainingState(params, b int64, world, zero int) (grads, optimizer int64) {
	shard := params
	if world > 1 && zero >= 1 {
		shard = (params + int64(world) - 1) / int64(world)
	}
	gradBytes, optBytes := b, int64(8)
	if b < 4 {
		gradBytes, optBytes = b+4, 12
	}
	grads, optimizer = params*gradBytes, shard*optBytes
	if zero >= 2 {
		grads = shard * gradBytes
	}
	return grads, optimizer
}

// DecodeState is what the decode engine of slots sequences of positions
// tokens each holds per layer, for a model decoding in b bytes a weight:
// an attention layer's keys and values (2 x kv_heads x head_dim per
// position, in the decoding dtype); a Gated DeltaNet layer's, whatever the
// length, its conv state (the last kernel-1 inputs of each of the conv's
// channels, 2 x k_heads x k_dim + v_heads x v_dim, in the decoding dtype)
// and its recurrent state (a k_dim x v_dim matrix per value head, in
// float32, the dtype the delta rule accumulates in for f32, bf16 and f16
// models alike). A Nemotron-H layer holds by its block: attention's keys
// and values; a Mamba-2 layer's conv state (kernel-1 inputs of its
// heads x head_dim + 2 x n_groups x ssm_state channels, in the decoding
// dtype) and recurrent state (a head_dim x ssm_state matrix per head, in
// float32), counted with the Gated DeltaNet's; an MLP layer's nothing.
// A Gemma 4 full layer's keys and values have its own head size and
// key/value heads; a kv-shared layer holds none (it reads another's).
// A full attention layer's cache spans all positions; a sliding-window
// layer's (Gemma 4's sliding layers, a Qwen2 or Qwen3 window) only its
// window, min(sliding_window, positions) of them (the engine keeps it as a
// ring).
func DecodeState(c torch.Config, slots, positions int, b int64) (kv, deltanet int64) {
	n := int64(slots)
	for i := range c.Layers {
		if c.IsNemotron() {
			switch nm := c.Nemotron; nm.Blocks[i] {
			case torch.MambaBlock:
				inner := int64(nm.Heads) * int64(nm.HeadDim)
				conv := (inner + 2*int64(nm.Groups)*int64(nm.State)) * int64(nm.ConvKernel-1) * b
				deltanet += n * (conv + inner*int64(nm.State)*4)
				continue
			case torch.MLPBlock:
				continue
			}
		}
		if linearLayer(c, i) {
			conv := int64(2*c.LinearKeyHeads*c.LinearKeyDim+c.LinearValueHeads*c.LinearValueDim) * int64(c.LinearConvKernel-1) * b
			recurrent := int64(c.LinearValueHeads) * int64(c.LinearKeyDim) * int64(c.LinearValueDim) * 4
			deltanet += n * (conv + recurrent)
			continue
		}
		heads, hd, held := c.KVHeads, c.HeadDim, positions
		if c.Window > 0 && i < len(c.WindowLayers) && c.WindowLayers[i] {
			held = min(c.Window, positions)
		}
		if g := c.Gemma; g != nil {
			if i >= c.Layers-g.KVSharedLayers {
				continue
			}
			if c.LayerTypes[i] != torch.SlidingAttention {
				heads, hd = g.GlobalKVHeads, g.GlobalHeadDim
			} else {
				held = min(g.SlidingWindow, positions)
			}
		}
		kv += 2 * n * int64(held) * int64(heads*hd) * b
	}
	return kv, deltanet
}

// linearLayer says whether layer i of c is a Gated DeltaNet layer.
func linearLayer(c torch.Config, i int) bool {
	return i < len(c.LayerTypes) && c.LayerTypes[i] == torch.LinearAttention
}
