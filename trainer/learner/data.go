package learner

import (
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trajectory"
)

// TokenData are the per-token arrays an update needs besides the
// trajectory's own (index j holds token j's): the old policy's logprobs
// (recomputed before the update, or nil until the update's one step fills
// them: oldFromStep), the reference's logprobs (KL term), the
// values before the update, and the rollout correction's weights on the
// policy-gradient term (nil without a correction).
type TokenData struct {
	Old, Ref, Values, Weight []float32
}

// TokenTable holds each trajectory's TokenData.
type TokenTable map[*trajectory.Trajectory]*TokenData

// prepare computes, without gradients, the data of trs an update needs:
// unless fromStep, the policy's logprobs at the sampling temperature
// (setOld), the reference's when there is one, and the critic's values
// when there is one (also set as the trajectories' Values, which the
// estimators read). With packing on (algorithm.pack_segments) the
// logprobs hold the tokens the losses read (lossTargets, 0 elsewhere) and
// the values every token.
func (l *Learner) prepare(trs []*trajectory.Trajectory, fromStep bool) (TokenTable, error) {
	c := l.s
	data := make(TokenTable, len(trs))
	for _, t := range trs {
		data[t] = &TokenData{}
	}
	want := lossTargets(c.LossMask)
	if !fromStep {
		rows, err := l.pass(l.policy, trs, want, torch.ForwardOptions{Temperature: c.Temperature, Entropy: true}, pickLogprobs, pickEntropy)
		if err != nil {
			return nil, err
		}
		for i, t := range trs {
			data.setOld(t, rows[i][0], rows[i][1])
		}
	}
	if l.ref != nil {
		rows, err := l.pass(l.ref, trs, want, torch.ForwardOptions{Temperature: c.Temperature}, pickLogprobs)
		if err != nil {
			return nil, err
		}
		for i, t := range trs {
			data[t].Ref = rows[i][0]
		}
	}
	if l.critic != nil {
		rows, err := l.pass(l.critic, trs, allTargets, valuesOnly, pickValues)
		if err != nil {
			return nil, err
		}
		for i, t := range trs {
			data[t].Values = rows[i][0]
			t.Values = rows[i][0]
		}
	}
	return data, nil
}

// setOld sets t's old logprobs (token j's at index j) and keeps them on
// the action tokens as t's TrainLogprobs, with the policy's entropies as
// its Entropies, for the store.
func (d TokenTable) setOld(t *trajectory.Trajectory, old, ent []float32) {
	d[t].Old = old
	t.TrainLogprobs, t.Entropies = onActions(t, old), onActions(t, ent)
}

// onActions is a copy of x holding its values on t's action tokens and 0
// elsewhere.
func onActions(t *trajectory.Trajectory, x []float32) []float32 {
	out := make([]float32, len(t.Tokens))
	for j, m := range t.Mask {
		if m == 1 && j < len(x) {
			out[j] = x[j]
		}
	}
	return out
}
