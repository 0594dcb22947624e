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
	rows, err := sharded(g, trs, func(mine []*trajectory.Trajectory) ([][][]float32, error) {
		return forwardEach(m, mine, micro, torch.ForwardOptions{Temperature: temperature}, func(o torch.Output) *torch.Tensor { return o.LogProbs })
	})
	return column(rows, 0), err
}

// TokenLogprobsEntropies is TokenLogprobs with the policy's entropy at
// every position too (index j holds the entropy of the distribution token
// j was drawn from), from the same forward pass.
func TokenLogprobsEntropies(g *dist.Group, m *torch.Model, trs []*trajectory.Trajectory, temperature float64, micro int) (logprobs, entropies [][]float32, err error) {
	rows, err := sharded(g, trs, func(mine []*trajectory.Trajectory) ([][][]float32, error) {
		return forwardEach(m, mine, micro, torch.ForwardOptions{Temperature: temperature, Entropy: true},
			func(o torch.Output) *torch.Tensor { return o.LogProbs }, func(o torch.Output) *torch.Tensor { return o.Entropy })
	})
	return column(rows, 0), column(rows, 1), err
}

// TokenValues computes the critic's value for every token (index j holds
// V before token j), sharded like TokenLogprobs.
func TokenValues(g *dist.Group, m *torch.Model, trs []*trajectory.Trajectory, micro int) ([][]float32, error) {
	rows, err := sharded(g, trs, func(mine []*trajectory.Trajectory) ([][][]float32, error) {
		return forwardEach(m, mine, micro, torch.ForwardOptions{Values: true, ValuesOnly: true}, func(o torch.Output) *torch.Tensor { return o.Values })
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

// sharded runs f on this rank's share of trs (dist.Shard) and gathers the
// rows of every rank back into trs's order.
func sharded[T any](g *dist.Group, trs []*trajectory.Trajectory, f func([]*trajectory.Trajectory) ([]T, error)) ([]T, error) {
	if g.World() == 1 {
		return f(trs)
	}
	local, err := f(dist.Shard(g, trs))
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
			out[r+k*g.World()] = row
		}
	}
	return out, nil
}

// forwardEach runs m without gradients over trs in micro-batches and
// returns, per trajectory, one row per picked output (token j's value at
// index j).
func forwardEach(m *torch.Model, trs []*trajectory.Trajectory, micro int, opt torch.ForwardOptions, picks ...func(torch.Output) *torch.Tensor) ([][][]float32, error) {
	out := make([][][]float32, len(trs))
	for i := range out {
		out[i] = make([][]float32, len(picks))
	}
	for _, mb := range MicroBatches(trs, micro) {
		p := PadBatch(Pick(trs, mb))
		o, err := m.Forward(p.Batch, opt)
		if err != nil {
			return nil, OOMHint(fmt.Errorf("forward of %d trajectories (%d tokens): %w", len(mb), p.Batch.T, err))
		}
		for c, pick := range picks {
			v, err := pick(o).Float32s()
			if err != nil {
				o.Free()
				return nil, err
			}
			for i, row := range p.Unpack(v) {
				out[mb[i]][c] = row
			}
		}
		o.Free()
	}
	return out, nil
}

// OOMHint adds what to change to an out-of-memory error; the run stays
// resumable from its last checkpoint.
func OOMHint(err error) error {
	if errors.Is(err, torch.ErrOutOfMemory) {
		return fmt.Errorf("%w\nhint: lower algorithm.micro_batch, rollout.slots or env.max_tokens, then continue with `trainer train --resume <run>`", err)
	}
	return err
}
