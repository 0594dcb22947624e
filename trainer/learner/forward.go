package learner

import (
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trajectory"
)

// forward runs m over p in s, its outputs owned by s and laid out as
// Forward's [B, T-1] over p's trajectories. A packed p runs ForwardPacked,
// and each output is scattered into the grid at its targets (a gather
// from the outputs after the base, so the gradient flows back to the
// packed outputs); elsewhere the grid holds base's grid of that output
// (nil: 0). No loss reads a token that is not a target, so the base only
// keeps the unread values finite. With replay the forward routes each
// token to the experts the rollout recorded for it (routing replay).
func forward(s *torch.Scope, m *torch.Model, p Padded, opt torch.ForwardOptions, base torch.Output, replay bool) (torch.Output, error) {
	if replay {
		if p.packed != nil {
			return torch.Output{}, fmt.Errorf("routing replay (algorithm.routing_replay) of packed segments is not implemented: set algorithm.pack_segments false")
		}
		var err error
		if opt.ReplayRouting, err = replayed(m, p); err != nil {
			return torch.Output{}, err
		}
	}
	if p.packed == nil {
		opt.HeadRows = p.heads
		o, err := m.Forward(p.Batch, opt)
		s.Own(o.LogProbs, o.Entropy, o.Values, o.AuxLoss)
		return o, err
	}
	o, err := m.ForwardPacked(p.packed.batch, opt)
	if err != nil {
		return o, err
	}
	s.Own(o.LogProbs, o.Entropy, o.Values, o.AuxLoss)
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
	out := torch.Output{LogProbs: grid(o.LogProbs, base.LogProbs), Entropy: grid(o.Entropy, base.Entropy), Values: grid(o.Values, base.Values),
		AuxLoss: o.AuxLoss}
	return out, s.Err()
}

// TokenLogprobs recomputes, without gradients, the log-probability of every
// token of every trajectory under m at the sampling temperature (index j
// holds token j's; index 0 is 0). These are the "old" logprobs of the PPO
// ratio and the reference's logprobs of the KL term. In a data-parallel
// job each rank computes its share and every rank receives all.
func TokenLogprobs(g *dist.Group, m *torch.Model, trs []*trajectory.Trajectory, temperature float64, micro int) ([][]float32, error) {
	rows, err := pass(g, m, NewBatch(trs, false), micro, allTargets, torch.ForwardOptions{Temperature: temperature}, false, pickLogprobs)
	return column(rows, 0), err
}

// TokenValues computes the critic's value for every token (index j holds
// V before token j), sharded like TokenLogprobs.
func TokenValues(g *dist.Group, m *torch.Model, trs []*trajectory.Trajectory, micro int) ([][]float32, error) {
	rows, err := pass(g, m, NewBatch(trs, false), micro, allTargets, valuesOnly, false, pickValues)
	return column(rows, 0), err
}

// column is the c-th output of every trajectory (nil rows give nil).
func column(rows [][][]float32, c int) [][]float32 {
	out := make([][]float32, len(rows))
	for i, r := range rows {
		if r != nil {
			out[i] = r[c]
		}
	}
	return out
}

// The picks of pass, and the options of a critic's forward.
var (
	pickLogprobs = func(o torch.Output) *torch.Tensor { return o.LogProbs }
	pickEntropy  = func(o torch.Output) *torch.Tensor { return o.Entropy }
	pickValues   = func(o torch.Output) *torch.Tensor { return o.Values }
	valuesOnly   = torch.ForwardOptions{Values: true, ValuesOnly: true}
)

// pass runs m without gradients over b in micro-batches of at most micro
// (this rank's share of its units; packed segments hold the tokens want
// asks for, 0 elsewhere) and returns, per trajectory of b, one row per
// picked output (token j's value at index j). In a data-parallel job
// every rank receives every rank's rows. With replay the forwards replay
// the rollout's routing.
func pass(g *dist.Group, m *torch.Model, b Batch, micro int, want targets, opt torch.ForwardOptions, replay bool, picks ...func(torch.Output) *torch.Tensor) ([][][]float32, error) {
	trs := b.Trajectories
	// Each rank's trajectories, in order: its units, dealt in turn.
	dealt := make([][]int, g.World())
	for u, unit := range b.units {
		dealt[u%g.World()] = append(dealt[u%g.World()], unit...)
	}
	mine := b.of(Pick(trs, dealt[g.Rank()]))
	local := make([][][]float32, len(mine.Trajectories))
	index := make(map[*trajectory.Trajectory]int, len(local))
	for i, t := range mine.Trajectories {
		local[i] = make([][]float32, len(picks))
		index[t] = i
	}
	for _, p := range microBatches(mine, micro, want) {
		if err := forwardRows(m, p, opt, replay, picks, func(c, i int, row []float32) { local[index[p.Trs[i]]][c] = row }); err != nil {
			return nil, err
		}
	}
	parts := [][][][]float32{local}
	if g.World() > 1 {
		var err error
		if parts, err = dist.Gather(g, local); err != nil {
			return nil, err
		}
	}
	out := make([][][]float32, len(trs))
	for r, rows := range parts {
		for k, row := range rows {
			out[dealt[r][k]] = row
		}
	}
	return out, nil
}

// forwardRows runs m without gradients over p (replaying the routing
// with replay) and hands each picked
// output's row of each trajectory (p.Trs[i]) to set.
func forwardRows(m *torch.Model, p Padded, opt torch.ForwardOptions, replay bool, picks []func(torch.Output) *torch.Tensor, set func(c, i int, row []float32)) error {
	s := torch.NewScopeOn(m.Device)
	defer s.Close()
	o, err := forward(s, m, p, opt, torch.Output{}, replay)
	if err != nil {
		return OOMHint(fmt.Errorf("forward of %d trajectories (%d tokens): %w", len(p.Trs), p.Tokens(), err))
	}
	for c, pick := range picks {
		v, err := pick(o).Float32s()
		if err != nil {
			return err
		}
		for i, row := range p.Unpack(v) {
			set(c, i, row)
		}
	}
	return nil
}

// OOMHint adds what to change to an out-of-memory error; the run stays
// resumable from its last checkpoint.
func OOMHint(err error) error {
	if errors.Is(err, torch.ErrOutOfMemory) {
		return fmt.Errorf("%w\nhint: lower algorithm.micro_batch, rollout.slots or env.max_tokens, then continue with `trainer train --run <run> --resume`", err)
	}
	return err
}
