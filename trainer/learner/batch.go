package learner

import (
	"math"
	"sort"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trajectory"
)

// Padded is a right-padded batch of trajectories. The model's outputs are
// [B, T-1]: output index j-1 predicts token j, so every per-token quantity
// of token j >= 1 sits at out(b, j). A packed batch (batches, with
// algorithm.pack_segments) runs its episodes' segments packed, and its
// outputs are laid out the same (forward).
type Padded struct {
	Trs    []*trajectory.Trajectory
	Batch  torch.Batch
	packed *packedRows // nil: the forward runs Batch
}

// PadBatch right-pads trs to the longest (at least 2 tokens) with
// attention 0 on the padding.
func PadBatch(trs []*trajectory.Trajectory) Padded {
	T := 2
	for _, t := range trs {
		T = max(T, len(t.Tokens))
	}
	B := len(trs)
	b := torch.Batch{B: B, T: T, IDs: make([]int64, B*T), Attn: make([]int64, B*T), Positions: make([]int64, B*T)}
	for i, t := range trs {
		for j := 0; j < T; j++ {
			k := i*T + j
			b.Positions[k] = int64(j)
			if j < len(t.Tokens) {
				b.IDs[k] = int64(t.Tokens[j])
				b.Attn[k] = 1
			}
		}
	}
	return Padded{Trs: trs, Batch: b}
}

// Width is T-1, the length of an output row.
func (p Padded) Width() int { return p.Batch.T - 1 }

// Grid lays out f(t, j) for tokens j = 1..len-1 of each trajectory as a
// [B, T-1] row-major slice (0 on padding).
func (p Padded) Grid(f func(t *trajectory.Trajectory, j int) float32) []float32 {
	w := p.Width()
	out := make([]float32, len(p.Trs)*w)
	for i, t := range p.Trs {
		for j := 1; j < len(t.Tokens); j++ {
			out[i*w+j-1] = f(t, j)
		}
	}
	return out
}

// Unpack turns a [B, T-1] output back into per-trajectory slices of
// len(Tokens), token j's value at index j (index 0, the first prompt token,
// is 0).
func (p Padded) Unpack(v []float32) [][]float32 {
	w := p.Width()
	out := make([][]float32, len(p.Trs))
	for i, t := range p.Trs {
		row := make([]float32, len(t.Tokens))
		copy(row[1:], v[i*w:i*w+len(t.Tokens)-1])
		out[i] = row
	}
	return out
}

// LossMask is 1 on the tokens the losses count: the policy's tokens, or
// with the loss mask off every token after the prompt (the ablation).
func LossMask(t *trajectory.Trajectory, j int, useMask bool) float32 {
	if useMask {
		return float32(t.Mask[j])
	}
	if j >= t.PromptLen {
		return 1
	}
	return 0
}

// MicroBatches splits trajectories into groups of at most n, sorted by
// length so padding stays small; it returns index lists into trs.
func MicroBatches(trs []*trajectory.Trajectory, n int) [][]int {
	idx := make([]int, len(trs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return len(trs[idx[a]].Tokens) < len(trs[idx[b]].Tokens) })
	var out [][]int
	for len(idx) > 0 {
		k := min(n, len(idx))
		out = append(out, idx[:k])
		idx = idx[k:]
	}
	return out
}

// Pick returns trs[idx[0]], trs[idx[1]], ...
func Pick(trs []*trajectory.Trajectory, idx []int) []*trajectory.Trajectory {
	out := make([]*trajectory.Trajectory, len(idx))
	for i, k := range idx {
		out[i] = trs[k]
	}
	return out
}

// Norm is the size of a whole mini-batch, which every micro-batch's loss is
// normalised by: its loss tokens (at least 1) and its sequences. Horizon is
// left to the caller (seq-mean-token-sum-norm's constant).
func Norm(mini []*trajectory.Trajectory, useMask bool) algo.Norm {
	n := algo.Norm{Sequences: float64(len(mini))}
	for _, t := range mini {
		for j := 1; j < len(t.Tokens); j++ {
			n.Tokens += float64(LossMask(t, j, useMask))
		}
	}
	n.Tokens = math.Max(n.Tokens, 1)
	return n
}
