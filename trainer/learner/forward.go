package learner

import (
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trajectory"
)

// TokenLogprobs recomputes, without gradients, the log-probability of every
// token of every trajectory under m at the sampling temperature (index j
// holds token j's; index 0 is 0). These are the "old" logprobs of the PPO
// ratio and the reference's logprobs of the KL term. In a data-parallel
// job each rank computes its share and every rank receives all.
func TokenLogprobs(g *dist.Group, m *torch.Model, trs []*trajectory.Trajectory, temperature float64, micro int) ([][]float32, error) {
	rows, err := sharded(g, trs, false, func(mine []*trajectory.Trajectory) ([][][]float32, error) {
		return forwardEach(m, mine, micro, nil, torch.ForwardOptions{Temperature: temperature}, pickLogprobs)
	})
	return column(rows, 0), err
}

// TokenValues computes the critic's value for every token (index j holds
// V before token j), sharded like TokenLogprobs.
func TokenValues(g *dist.Group, m *torch.Model, trs []*trajectory.Trajectory, micro int) ([][]float32, error) {
	rows, err := sharded(g, trs, false, func(mine []*trajectory.Trajectory) ([][][]float32, error) {
		return forwardEach(m, mine, micro, nil, valuesOnly, pickValues)
	})
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

// sharded runs f on this rank's share of trs and gathers the rows of every
// rank back into trs's order. The ranks are dealt units of trs in turn, as
// dist.Shard deals: each trajectory alone, or with byEpisode an episode's
// segments together (unitsOf).
func sharded[T any](g *dist.Group, trs []*trajectory.Trajectory, byEpisode bool, f func([]*trajectory.Trajectory) ([]T, error)) ([]T, error) {
	if g.World() == 1 {
		return f(trs)
	}
	dealt := make([][]int, g.World()) // each rank's trajectories, in order
	for u, unit := range unitsOf(trs, byEpisode) {
		dealt[u%g.World()] = append(dealt[u%g.World()], unit...)
	}
	local, err := f(Pick(trs, dealt[g.Rank()]))
	if err != nil {
		return nil, err
	}
	parts, err := dist.Gather(g, local)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(trs))
	for r, rows := range parts {
		for k, row := range rows {
			out[dealt[r][k]] = row
		}
	}
	return out, nil
}

// pass runs m without gradients over trs (this rank's share, whole
// episodes when packing, gathered as in TokenLogprobs) and returns, per trajectory, one row per picked
// output. With packing on (algorithm.pack_segments) the segments of an
// episode run packed, and the rows hold the tokens want asks for (0
// elsewhere).
func (l *Learner) pass(m *torch.Model, trs []*trajectory.Trajectory, want targets, opt torch.ForwardOptions, picks ...func(torch.Output) *torch.Tensor) ([][][]float32, error) {
	return sharded(l.dist, trs, l.s.PackSegments, func(mine []*trajectory.Trajectory) ([][][]float32, error) {
		return forwardEach(m, mine, l.s.MicroBatch, l.packTargets(want), opt, picks...)
	})
}

// The picks of forwardEach, and the options of a critic's forward.
var (
	pickLogprobs = func(o torch.Output) *torch.Tensor { return o.LogProbs }
	pickEntropy  = func(o torch.Output) *torch.Tensor { return o.Entropy }
	pickValues   = func(o torch.Output) *torch.Tensor { return o.Values }
	valuesOnly   = torch.ForwardOptions{Values: true, ValuesOnly: true}
)

// forwardEach runs m without gradients over trs in micro-batches (packed
// by episode with the targets want asks for, unless want is nil: batches)
// and returns, per trajectory, one row per picked output (token j's value
// at index j).
func forwardEach(m *torch.Model, trs []*trajectory.Trajectory, micro int, want targets, opt torch.ForwardOptions, picks ...func(torch.Output) *torch.Tensor) ([][][]float32, error) {
	out := make([][][]float32, len(trs))
	index := make(map[*trajectory.Trajectory]int, len(trs))
	for i, t := range trs {
		out[i] = make([][]float32, len(picks))
		index[t] = i
	}
	for _, p := range batches(trs, micro, want) {
		if err := forwardOnce(m, p, opt, picks, func(c, i int, row []float32) { out[index[p.Trs[i]]][c] = row }); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// forwardOnce runs m without gradients over p and hands each picked
// output's row of each trajectory (p.Trs[i]) to set.
func forwardOnce(m *torch.Model, p Padded, opt torch.ForwardOptions, picks []func(torch.Output) *torch.Tensor, set func(c, i int, row []float32)) error {
	s := torch.NewScopeOn(m.Device)
	defer s.Close()
	o, err := forward(s, m, p, opt, torch.Output{})
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
