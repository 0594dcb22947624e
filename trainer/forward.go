package trainer

import (
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/traj"
)

// tokenLogprobs recomputes, without gradients, the log-probability of every
// token of every trajectory under m at the sampling temperature (index j
// holds token j's; index 0 is 0). These are the "old" logprobs of the PPO
// ratio and the reference's logprobs of the KL term.
func tokenLogprobs(m *torch.Model, trs []*traj.Trajectory, temperature float64, micro int) ([][]float32, error) {
	return forwardEach(m, trs, micro, torch.ForwardOptions{Temperature: temperature}, func(o torch.Output) *torch.Tensor { return o.LogProbs })
}

// tokenValues computes the critic's value for every token (index j holds
// V before token j).
func tokenValues(m *torch.Model, trs []*traj.Trajectory, micro int) ([][]float32, error) {
	return forwardEach(m, trs, micro, torch.ForwardOptions{Values: true}, func(o torch.Output) *torch.Tensor { return o.Values })
}

func forwardEach(m *torch.Model, trs []*traj.Trajectory, micro int, opt torch.ForwardOptions, pickOut func(torch.Output) *torch.Tensor) ([][]float32, error) {
	out := make([][]float32, len(trs))
	for _, mb := range microBatches(trs, micro) {
		p := padBatch(pick(trs, mb))
		o, err := m.Forward(p.batch, opt)
		if err != nil {
			return nil, oomHint(fmt.Errorf("forward of %d trajectories (%d tokens): %w", len(mb), p.batch.T, err))
		}
		v, err := pickOut(o).Float32s()
		o.Free()
		if err != nil {
			return nil, err
		}
		for i, row := range p.unpack(v) {
			out[mb[i]] = row
		}
	}
	return out, nil
}

// oomHint adds what to change to an out-of-memory error; the run stays
// resumable from its last checkpoint.
func oomHint(err error) error {
	if errors.Is(err, torch.ErrOutOfMemory) {
		return fmt.Errorf("%w\nhint: lower algorithm.micro_batch, rollout.slots or env.max_tokens, then continue with `trainer train --resume <run>`", err)
	}
	return err
}
