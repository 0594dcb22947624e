package ppo

import (
	"fmt"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/loss"
	"github.com/agentrl/agentrl/trainer/traj"
)

// policyStep is one optimizer step of the policy (and a shared critic) on
// a mini-batch.
func (l *Learner) policyStep(mini []*traj.Trajectory, data Data, st *Stats) error {
	st.policySteps++
	n := l.norm(mini)
	k := stepper{name: "policy", opt: l.Opt, dist: l.Dist, micro: l.Config.MicroBatch, maxGradNorm: l.Config.MaxGradNorm}
	r, err := k.step(mini, func(s *torch.Scope, p Padded) (*torch.Tensor, error) {
		return l.policyLoss(s, p, data, n, st)
	})
	if err != nil {
		return err
	}
	if !r.Taken {
		st.Skipped++
		for _, t := range mini {
			st.SkippedIDs = append(st.SkippedIDs, t.ID)
		}
		return nil
	}
	st.GradNorm += r.GradNorm
	st.Steps++
	if l.shared() {
		st.criticSteps++
		st.CriticGradNorm += r.GradNorm
	}
	return nil
}

// policyLoss is one micro-batch's loss of the policy: PPO's clipped
// surrogate, the KL-to-reference term and the entropy bonus when they are
// on, and a shared value head's weighted value loss. It adds the
// micro-batch's diagnostics to st.
func (l *Learner) policyLoss(s *torch.Scope, p Padded, data Data, n algo.Norm, st *Stats) (*torch.Tensor, error) {
	c := l.Config
	// The entropy's graph is built only when the entropy bonus weighs in.
	o, err := l.Policy.Forward(p.Batch, torch.ForwardOptions{Temperature: c.Temperature, Grad: true, Entropy: true,
		EntropyGrad: c.TrainPolicy && c.Loss.EntropyCoef != 0, Values: l.shared()})
	if err != nil {
		return nil, OOMHint(fmt.Errorf("policy forward of %d trajectories (%d tokens): %w", len(p.Trs), p.Batch.T, err))
	}
	s.Own(o.LogProbs, o.Entropy, o.Values)
	B, W := int64(len(p.Trs)), int64(p.Width())
	maskV := p.Grid(func(t *traj.Trajectory, j int) float32 { return LossMask(t, j, c.LossMask) })
	advV := p.Grid(func(t *traj.Trajectory, j int) float32 { return t.Advantages[j] })
	oldV := p.Grid(func(t *traj.Trajectory, j int) float32 { return data[t].Old[j] })
	mask := s.Float32(maskV, B, W)
	total := s.Float32([]float32{0})
	if c.TrainPolicy {
		pg := loss.PolicyLoss(s, o.LogProbs, s.Float32(oldV, B, W), s.Float32(advV, B, W), mask, c.Loss, n)
		total = s.Add(total, pg)
		st.PolicyLoss += item(s, pg)
		if c.Loss.KLInLoss && c.Loss.KLCoef != 0 {
			refV := p.Grid(func(t *traj.Trajectory, j int) float32 { return data[t].Ref[j] })
			kl := loss.KLLoss(s, o.LogProbs, s.Float32(refV, B, W), mask, c.Loss.KLEstimator, c.Loss.Agg, n)
			total = s.Add(total, s.MulScalar(kl, c.Loss.KLCoef))
			st.KLLoss += item(s, kl)
		}
		if c.Loss.EntropyCoef != 0 {
			ent := loss.Aggregate(s, o.Entropy, mask, c.Loss.Agg, n)
			total = s.Sub(total, s.MulScalar(ent, c.Loss.EntropyCoef))
		}
		if err := l.diagnose(s, o, oldV, advV, maskV, mask, st); err != nil {
			return nil, err
		}
	}
	if l.shared() {
		vl := l.valueLoss(s, p, o.Values, mask, data, n)
		total = s.Add(total, s.MulScalar(vl, c.Loss.VFCoef))
		st.ValueLoss += item(s, vl)
	}
	return total, nil
}

// diagnose adds a micro-batch's entropy, clip fractions and approximate
// KL to st, weighted by its loss tokens: per token, independent of the
// mini-batch weighting.
func (l *Learner) diagnose(s *torch.Scope, o torch.Output, oldV, advV, maskV []float32, mask *torch.Tensor, st *Stats) error {
	lp, err := o.LogProbs.Float32s()
	if err != nil {
		return err
	}
	d := algo.PolicyDiagnostics(lp, oldV, advV, maskV, l.Config.Loss.ClipLow, l.Config.Loss.ClipHigh)
	if d.Tokens > 0 {
		w := float64(d.Tokens)
		st.ClipFracLow += d.ClipFracLow * w
		st.ClipFracHigh += d.ClipFracHigh * w
		st.ApproxKL += d.ApproxKL * w
		st.Entropy += item(s, s.MaskedMean(o.Entropy, mask)) * w
		st.Tokens += d.Tokens
	}
	return nil
}
