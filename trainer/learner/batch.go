package learner

import (
	"fmt"
	"math"
	"sort"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/packing"
	"github.com/agentrl/agentrl/trajectory"
)

// Batch is what an update learns from: its trajectories, grouped in the
// units that the mini-batches, the ranks and the micro-batches keep
// together. A batch that packs its segments (algorithm.pack_segments)
// holds each episode's segments (algo.EpisodeOf) in one unit, and a
// micro-batch runs its episodes of several segments as trainer/packing's
// prefix trees, one episode a row, their shared prefixes once; otherwise
// every trajectory is a unit of its own and runs as a sample.
type Batch struct {
	Trajectories []*trajectory.Trajectory
	Packed       bool    // the segments of an episode stay together and run packed
	units        [][]int // positions in Trajectories, one list a unit
}

// NewBatch is the batch of trs, its segments packed when packed.
func NewBatch(trs []*trajectory.Trajectory, packed bool) Batch {
	b := Batch{Trajectories: trs, Packed: packed}
	if packed {
		b.units = episodesOf(trs)
		return b
	}
	b.units = make([][]int, len(trs))
	for i := range b.units {
		b.units[i] = []int{i}
	}
	return b
}

// of is the batch of trs packed as b is.
func (b Batch) of(trs []*trajectory.Trajectory) Batch { return NewBatch(trs, b.Packed) }

// shard is this rank's share of b: its units dealt to the ranks in turn,
// as dist.Shard deals, so that an episode's packed segments stay on one
// rank.
func (b Batch) shard(g *dist.Group) Batch {
	var out []*trajectory.Trajectory
	for _, u := range dist.Shard(g, b.units) {
		out = append(out, Pick(b.Trajectories, u)...)
	}
	return b.of(out)
}

// miniBatches fills mini-batches of at most n trajectories with whole
// units, in order; a unit of more than n fills one alone. It returns
// positions.
func miniBatches(units [][]int, n int) [][]int {
	var out [][]int
	var cur []int
	for _, u := range units {
		if len(cur) > 0 && len(cur)+len(u) > n {
			out = append(out, cur)
			cur = nil
		}
		cur = append(cur, u...)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// Padded is a right-padded batch of trajectories. The model's outputs are
// [B, T-1]: output index j-1 predicts token j, so every per-token quantity
// of token j >= 1 sits at out(b, j). A packed micro-batch runs its
// episodes' segments packed, and its outputs are laid out the same
// (forward).
type Padded struct {
	Trs    []*trajectory.Trajectory
	Batch  torch.Batch
	packed *packedRows // nil: the forward runs Batch
	// heads are the outputs of Batch's forward the LM head computes
	// (torch.ForwardOptions.HeadRows), nil: all.
	heads []int64
}

// packedRows are the segments of a micro-batch's episodes packed one
// episode a row, as trainer/packing's prefix tree, and the targets the
// forward reads: at[j] is target j's index in the [B, T-1] grid of the
// same trajectories padded as samples of their own (Padded), so that the
// packed outputs are laid out as Forward's.
type packedRows struct {
	batch  torch.PackedBatch
	at     []int64
	tokens int // the packed tokens, padding left out
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

// Tokens is the number of tokens p's forward runs through the model:
// the packed tokens of its rows, or its trajectories' own, padding left
// out.
func (p Padded) Tokens() int {
	if p.packed != nil {
		return p.packed.tokens
	}
	return tokens(p.Trs)
}

// tokens is the number of tokens of trs.
func tokens(trs []*trajectory.Trajectory) int {
	n := 0
	for _, t := range trs {
		n += len(t.Tokens)
	}
	return n
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

// Pick returns trs[idx[0]], trs[idx[1]], ...
func Pick(trs []*trajectory.Trajectory, idx []int) []*trajectory.Trajectory {
	out := make([]*trajectory.Trajectory, len(idx))
	for i, k := range idx {
		out[i] = trs[k]
	}
	return out
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

// unitMicroBatches is MicroBatches keeping the units of trs together,
// so that an episode's segments can be packed: the trajectories of units
// of one are split as MicroBatches splits them, then the units of several
// (an episode's segments), fewest tokens first, fill micro-batches of at
// most n trajectories whole (a unit of more than n fills one alone).
// multi[i] says whether micro-batch i holds units of several.
func unitMicroBatches(trs []*trajectory.Trajectory, units [][]int, n int) (mbs [][]int, multi []bool) {
	var single []int
	var eps [][]int
	for _, e := range units {
		if len(e) == 1 {
			single = append(single, e[0])
		} else {
			eps = append(eps, e)
		}
	}
	for _, mb := range MicroBatches(Pick(trs, single), n) {
		idx := make([]int, len(mb))
		for i, k := range mb {
			idx[i] = single[k]
		}
		mbs, multi = append(mbs, idx), append(multi, false)
	}
	size := func(e []int) int { return tokens(Pick(trs, e)) }
	sort.SliceStable(eps, func(a, b int) bool { return size(eps[a]) < size(eps[b]) })
	for _, mb := range miniBatches(eps, n) {
		mbs, multi = append(mbs, mb), append(multi, true)
	}
	return mbs, multi
}

// microBatches are the micro-batches of b, padded, of at most n
// trajectories: a unit's trajectories stay in one micro-batch, and a
// micro-batch of episodes of several segments is packed one episode a row
// with the targets want asks for (the tokens its outputs are read at).
func microBatches(b Batch, n int, want targets) []Padded {
	trs := b.Trajectories
	mbs, multi := unitMicroBatches(trs, b.units, n)
	out := make([]Padded, len(mbs))
	for i, mb := range mbs {
		out[i] = PadBatch(Pick(trs, mb))
		if multi[i] {
			out[i].packed = packRows(out[i], want)
		} else if want != nil {
			out[i].heads = headRows(out[i], want)
		}
	}
	return out
}

// targets says which tokens j of t a forward's LM head computes (a
// packed forward's outputs, a padded one's HeadRows); the others are not
// read, and hold the forward's base there (forward). nil: every token.
type targets func(t *trajectory.Trajectory, j int) bool

// reads says whether w asks for token j of t.
func (w targets) reads(t *trajectory.Trajectory, j int) bool { return w == nil || w(t, j) }

// headRows are the outputs of p's padded forward want asks for, as flat
// indices i*W+j-1 (token j of trajectory i); nil when it asks for none,
// so that the head then runs whole rather than not at all.
func headRows(p Padded, want targets) []int64 {
	W := p.Width()
	var rows []int64
	for i, t := range p.Trs {
		for j := 1; j < len(t.Tokens); j++ {
			if want(t, j) {
				rows = append(rows, int64(i*W+j-1))
			}
		}
	}
	return rows
}

// lossTargets are the tokens the losses and the old logprobs are read at:
// the loss tokens (LossMask) and the policy's tokens.
func lossTargets(useMask bool) targets {
	return func(t *trajectory.Trajectory, j int) bool { return t.Mask[j] == 1 || LossMask(t, j, useMask) != 0 }
}

// allTargets are every token after the first: a critic's values, which
// the estimators read everywhere.
var allTargets targets

// episodeKey is the episode t is a segment of; a trajectory without an ID
// is an episode of its own.
func episodeKey(t *trajectory.Trajectory, i int) string {
	if t.ID == "" {
		return fmt.Sprintf("\x00%d", i)
	}
	return algo.EpisodeOf(t)
}

// episodesOf groups the positions of trs by episode (episodeKey), in the
// order of their first segments.
func episodesOf(trs []*trajectory.Trajectory) [][]int {
	var out [][]int
	at := map[string]int{}
	for i, t := range trs {
		k := episodeKey(t, i)
		e, ok := at[k]
		if !ok {
			e = len(out)
			at[k] = e
			out = append(out, nil)
		}
		out[e] = append(out[e], i)
	}
	return out
}

// packRows packs p's trajectories one episode a row, with the targets
// want asks for; nil when want asks for none (the forward then runs
// unpacked).
func packRows(p Padded, want targets) *packedRows {
	eps := episodesOf(p.Trs)
	layouts := make([]packing.Layout, len(eps))
	T := 1
	for r, e := range eps {
		seqs := make([][]int32, len(e))
		for s, i := range e {
			seqs[s] = p.Trs[i].Tokens
		}
		layouts[r] = packing.Pack(seqs)
		T = max(T, layouts[r].Len())
	}
	B, W := len(eps), p.Width()
	b := torch.PackedBatch{B: B, T: T, IDs: make([]int64, B*T), Positions: make([]int64, B*T), Allowed: make([]uint8, B*T*T),
		Lens: make([]int64, B)}
	var at []int64
	packed := 0
	for r, l := range layouts {
		n := l.Len()
		packed += n
		b.Lens[r] = int64(n)
		allowed := l.Allowed()
		for i := range T {
			if i >= n {
				b.Allowed[(r*T+i)*T+i] = 1 // padding attends itself only
				continue
			}
			b.IDs[r*T+i], b.Positions[r*T+i] = int64(l.IDs[i]), int64(l.Positions[i])
			copy(b.Allowed[(r*T+i)*T:(r*T+i)*T+n], allowed[i*n:(i+1)*n])
		}
		for s, i := range eps[r] {
			t := p.Trs[i]
			for j := 1; j < len(t.Tokens); j++ {
				if !want.reads(t, j) {
					continue
				}
				src, tok, _ := l.Target(s, j)
				b.Row, b.Src, b.Tgt = append(b.Row, int64(r)), append(b.Src, int64(src)), append(b.Tgt, int64(tok))
				at = append(at, int64(i*W+j-1))
			}
		}
	}
	if len(at) == 0 {
		return nil
	}
	return &packedRows{batch: b, at: at, tokens: packed}
}
