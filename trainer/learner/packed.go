package learner

import (
	"fmt"
	"sort"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/packing"
	"github.com/agentrl/agentrl/trajectory"
)

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

// targets says which tokens j of t a packed forward computes; the others
// are not read, and hold the forward's base there (forward).
type targets func(t *trajectory.Trajectory, j int) bool

// lossTargets are the tokens the losses and the old logprobs are read at:
// the loss tokens (LossMask) and the policy's tokens.
func lossTargets(useMask bool) targets {
	return func(t *trajectory.Trajectory, j int) bool { return t.Mask[j] == 1 || LossMask(t, j, useMask) != 0 }
}

// allTargets are every token after the first: a critic's values, which
// the estimators read everywhere.
func allTargets(*trajectory.Trajectory, int) bool { return true }

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

// EpisodeMicroBatches is MicroBatches keeping the segments of each episode
// (algo.EpisodeOf) together, so that they can be packed: the trajectories
// of episodes of one segment are split as MicroBatches splits them, then
// the episodes of several segments, fewest tokens first, fill micro-batches
// of at most n trajectories with whole episodes (an episode of more than n
// segments fills one alone). multi[i] says whether micro-batch i holds
// episodes of several segments.
func EpisodeMicroBatches(trs []*trajectory.Trajectory, n int) (mbs [][]int, multi []bool) {
	var single []int
	var eps [][]int
	for _, e := range episodesOf(trs) {
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

// unitsOf are the positions of trs that the epochs shuffle and the ranks
// are dealt together: each trajectory alone, or with byEpisode each
// episode's segments (episodesOf).
func unitsOf(trs []*trajectory.Trajectory, byEpisode bool) [][]int {
	if byEpisode {
		return episodesOf(trs)
	}
	units := make([][]int, len(trs))
	for i := range units {
		units[i] = []int{i}
	}
	return units
}

// shardEpisodes is this rank's share of trs as dist.Shard deals it, but
// dealt by episode, so that an episode's segments stay on one rank and
// can be packed. Without episodes of several segments it is dist.Shard's.
func shardEpisodes(g *dist.Group, trs []*trajectory.Trajectory) []*trajectory.Trajectory {
	var out []*trajectory.Trajectory
	for _, e := range dist.Shard(g, episodesOf(trs)) {
		out = append(out, Pick(trs, e)...)
	}
	return out
}

// batches are the micro-batches of trs, padded: with want (packing), an
// episode's segments stay in one micro-batch, packed one episode a row
// with the targets want asks for; without it, MicroBatches.
func batches(trs []*trajectory.Trajectory, n int, want targets) []Padded {
	if want == nil {
		var out []Padded
		for _, mb := range MicroBatches(trs, n) {
			out = append(out, PadBatch(Pick(trs, mb)))
		}
		return out
	}
	mbs, multi := EpisodeMicroBatches(trs, n)
	out := make([]Padded, len(mbs))
	for i, mb := range mbs {
		out[i] = PadBatch(Pick(trs, mb))
		if multi[i] {
			out[i].packed = packRows(out[i], want)
		}
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
	b := torch.PackedBatch{B: B, T: T, IDs: make([]int64, B*T), Positions: make([]int64, B*T), Allowed: make([]uint8, B*T*T)}
	var at []int64
	packed := 0
	for r, l := range layouts {
		n := l.Len()
		packed += n
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
				if !want(t, j) {
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

// forward runs m over p in s, its outputs owned by s and laid out as
// Forward's [B, T-1] over p's trajectories. A packed p runs ForwardPacked,
// and each output is scattered into the grid at its targets (a gather
// from the outputs after the base, so the gradient flows back to the
// packed outputs); elsewhere the grid holds base's grid of that output
// (nil: 0). No loss reads a token that is not a target, so the base only
// keeps the unread values finite.
func forward(s *torch.Scope, m *torch.Model, p Padded, opt torch.ForwardOptions, base torch.Output) (torch.Output, error) {
	if p.packed == nil {
		o, err := m.Forward(p.Batch, opt)
		s.Own(o.LogProbs, o.Entropy, o.Values)
		return o, err
	}
	o, err := m.ForwardPacked(p.packed.batch, opt)
	if err != nil {
		return o, err
	}
	s.Own(o.LogProbs, o.Entropy, o.Values)
	B, W := int64(len(p.Trs)), int64(p.Width())
	idx := make([]int64, B*W)
	for k := range idx {
		idx[k] = int64(k)
	}
	for j, a := range p.packed.at {
		idx[a] = B*W + int64(j)
	}
	index := s.Int64(idx, B*W)
	grid := func(x, base *torch.Tensor) *torch.Tensor {
		if x == nil {
			return nil
		}
		if base == nil {
			base = s.Float32(make([]float32, B*W), B, W)
		}
		all := s.Cat(0, s.Reshape(s.To(base, s.Device(), x.DType()), -1), x)
		return s.Reshape(s.Gather(all, 0, index), B, W)
	}
	out := torch.Output{LogProbs: grid(o.LogProbs, base.LogProbs), Entropy: grid(o.Entropy, base.Entropy), Values: grid(o.Values, base.Values)}
	return out, s.Err()
}
