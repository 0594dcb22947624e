package learner

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

// prepare computes, without gradients, the data of trs an update needs:
// the policy's logprobs at the sampling temperature, the reference's when
// there is one, and the critic's values when there is one (also set as
// the trajectories' Values, which the estimators read).
func (l *Learner) prepare(trs []*trajectory.Trajectory) (Data, error) {
	c := l.s
	old, err := TokenLogprobs(l.dist, l.policy, trs, c.Temperature, c.MicroBatch)
	if err != nil {
		return nil, err
	}
	data := make(Data, len(trs))
	for i, t := range trs {
		data[t] = &TokenData{Old: old[i]}
	}
	if l.ref != nil {
		ref, err := TokenLogprobs(l.dist, l.ref, trs, c.Temperature, c.MicroBatch)
		if err != nil {
			return nil, err
		}
		for i, t := range trs {
			data[t].Ref = ref[i]
		}
	}
	if l.critic != nil {
		vals, err := TokenValues(l.dist, l.critic, trs, c.MicroBatch)
		if err != nil {
			return nil, err
		}
		for i, t := range trs {
			data[t].Values = vals[i]
			t.Values = vals[i]
		}
	}
	return data, nil
}
