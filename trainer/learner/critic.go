package learner

import (
	"fmt"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/loss"
	"github.com/agentrl/agentrl/trajectory"
)

// criticStep is one optimizer step of a separate critic on a mini-batch.
func (l *Learner) criticStep(mini []*trajectory.Trajectory, data TokenTable, st *Stats) error {
	n := l.norm(mini)
	k := stepper{name: "critic", dev: l.critic.Device, opt: l.criticOpt, dist: l.dist, micro: l.s.MicroBatch, maxGradNorm: l.s.MaxGradNorm,
		want: l.packTargets(lossTargets(l.s.LossMask))}
	r, err := k.step(mini, func(s *torch.Scope, p Padded, _ *readback) (*torch.Tensor, error) {
		return l.criticLoss(s, p, data, n)
	})
	if err != nil {
		return err
	}
	st.Timing.add(r.Timing)
	if !r.Taken {
		st.Skipped++
		return nil
	}
	st.ValueLoss += r.Loss
	st.CriticGradNorm += r.GradNorm
	st.criticSteps++
	return nil
}

// criticLoss is one micro-batch's value loss of a separate critic.
func (l *Learner) criticLoss(s *torch.Scope, p Padded, data TokenTable, n algo.Norm) (*torch.Tensor, error) {
	// Only the value head's output: no logits over the vocabulary.
	o, err := forward(s, l.critic, p, torch.ForwardOptions{Grad: true, Values: true, ValuesOnly: true}, torch.Output{})
	if err != nil {
		return nil, OOMHint(fmt.Errorf("critic forward of %d trajectories: %w", len(p.Trs), err))
	}
	maskV := p.Grid(func(t *trajectory.Trajectory, j int) float32 { return LossMask(t, j, l.s.LossMask) })
	return l.valueLoss(s, p, o.Values, s.Float32(maskV, int64(len(p.Trs)), int64(p.Width())), data, n), nil
}

// valueLoss is PPO2's clipped value loss of a micro-batch against the
// returns, clipped around the values before the update.
func (l *Learner) valueLoss(s *torch.Scope, p Padded, values, mask *torch.Tensor, data TokenTable, n algo.Norm) *torch.Tensor {
	B, W := int64(len(p.Trs)), int64(p.Width())
	oldV := p.Grid(func(t *trajectory.Trajectory, j int) float32 { return data[t].Values[j] })
	retV := p.Grid(func(t *trajectory.Trajectory, j int) float32 { return t.Returns[j] })
	return loss.ValueLoss(s, values, s.Float32(oldV, B, W), s.Float32(retV, B, W), mask, l.s.Loss.ValueClip, l.s.Loss.Agg, n)
}
