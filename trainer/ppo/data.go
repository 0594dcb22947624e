package ppo

import (
	"github.com/agentrl/agentrl/trajectory"
)

// TokenData are the per-token arrays an update needs besides the
// trajectory's own (index j holds token j's): the old policy's logprobs
// (recomputed before the update), the reference's logprobs (KL term) and
// the values before the update.
type TokenData struct {
	Old, Ref, Values []float32
}

// Data holds each trajectory's TokenData.
type Data map[*trajectory.Trajectory]*TokenData

// Prepare computes, without gradients, the data of trs an update needs:
// the policy's logprobs at the sampling temperature, the reference's when
// there is one, and the critic's values when there is one.
func (l *Learner) Prepare(trs []*trajectory.Trajectory) (Data, error) {
	c := l.Config
	old, err := TokenLogprobs(l.Dist, l.Policy, trs, c.Temperature, c.MicroBatch)
	if err != nil {
		return nil, err
	}
	data := make(Data, len(trs))
	for i, t := range trs {
		data[t] = &TokenData{Old: old[i]}
	}
	if l.Ref != nil {
		ref, err := TokenLogprobs(l.Dist, l.Ref, trs, c.Temperature, c.MicroBatch)
		if err != nil {
			return nil, err
		}
		for i, t := range trs {
			data[t].Ref = ref[i]
		}
	}
	if l.Critic != nil {
		vals, err := TokenValues(l.Dist, l.Critic, trs, c.MicroBatch)
		if err != nil {
			return nil, err
		}
		for i, t := range trs {
			data[t].Values = vals[i]
		}
	}
	return data, nil
}
