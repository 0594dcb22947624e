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
	return sharded(g, trs, func(mine []*trajectory.Trajectory) ([][]float32, error) {
		return forwardEach(m, mine, micro, torch.ForwardOptions{Temperature: temperature}, func(o torch.Output) *torch.Tensor { return o.LogProbs })
	})
}

// TokenValues computes the critic's value for every token (index j holds
// V before token j), sharded like TokenLogprobs.
func TokenValues(g *dist.Group, m *torch.Model, trs []*trajectory.Trajectory, micro int) ([][]float32, error) {
	return sharded(g, trs, func(mine []*trajectory.Trajectory) ([][]float32, error) {
		return forwardEach(m, mine, micro, torch.ForwardOptions{Values: true, ValuesOnly: true}, func(o torch.Output) *torch.Tensor { return o.Values })
	})
}

// sharded runs f on this rank's share of trs (dist.Shard) and gathers the
// rows of every rank back into trs's order.
func sharded(g *dist.Group, trs []*trajectory.Trajectory, f func([]*trajectory.Trajectory) ([][]float32, error)) ([][]float32, error) {
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
	out := make([][]float32, len(trs))
	for r, rows := range parts {
		for k, row := range rows {
			out[r+k*g.World()] = row
		}
	}
	return out, nil
}

func forwardEach(m *torch.Model, trs []*trajectory.Trajectory, micro int, opt torch.ForwardOptions, pickOut func(torch.Output) *torch.Tensor) ([][]float32, error) {
	out := make([][]float32, len(trs))
	for _, mb := range MicroBatches(trs, micro) {
		p := PadBatch(Pick(trs, mb))
		o, err := m.Forward(p.Batch, opt)
		if err != nil {
			return nil, OOMHint(fmt.Errorf("forward of %d trajectories (%d tokens): %w", len(mb), p.Batch.T, err))
		}
		v, err := pickOut(o).Float32s()
		o.Free()
		if err != nil {
			return nil, err
		}
		for i, row := range p.Unpack(v) {
			out[mb[i]] = row
		}
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
