package learner

import (
	"fmt"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/loss"
	"github.com/agentrl/agentrl/trajectory"
)

// oldSource says where a policy step's old logprobs come from, decided
// by the update (oldFromStep) and handed down to the loss.
type oldSource int

// The sources of the old logprobs.
const (
	oldRecomputed  oldSource = iota // the table's Old, from the pass of their own before the update (prepare)
	oldFromForward                  // the step's own training forward, detached (the ratio is exactly 1)
)

// forwardRows are one trajectory's logprobs and entropies from a training
// forward, handed back by a step whose old logprobs came from it.
type forwardRows struct {
	t        *trajectory.Trajectory
	old, ent []float32
}

// policyIn are what a micro-batch's policy loss reads besides the batch.
type policyIn struct {
	data        TokenTable
	norm        algo.Norm
	trainPolicy bool      // false: the critic's warm-up, only a shared value head's loss counts
	old         oldSource // where the old logprobs come from
}

// policyStep is one optimizer step of the policy (and a shared critic) on
// a mini-batch; without trainPolicy (the critic's warm-up) only the shared
// value head's loss counts. When old is oldFromForward the step's training
// forwards give the old logprobs; they are set on data, with the forwards'
// entropies, once the step is done (taken or skipped).
func (l *Learner) policyStep(mini []*trajectory.Trajectory, data TokenTable, trainPolicy bool, old oldSource, st *Stats) error {
	st.policySteps++
	in := policyIn{data: data, norm: l.norm(mini), trainPolicy: trainPolicy, old: old}
	k := stepper{name: "policy", dev: l.policy.Device, opt: l.opt, dist: l.dist, micro: l.s.MicroBatch, maxGradNorm: l.s.MaxGradNorm,
		want: l.packTargets(lossTargets(l.s.LossMask))}
	var fwd []forwardRows
	r, err := k.step(mini, func(s *torch.Scope, p Padded, rep *readback) (*torch.Tensor, error) {
		return l.policyLoss(s, p, in, st, rep, &fwd)
	})
	if err != nil {
		return err
	}
	for _, f := range fwd {
		data.setOld(f.t, f.old, f.ent)
	}
	st.Timing.add(r.Timing)
	st.UpdateTokens += r.Tokens
	st.SampleTokens += r.Samples
	if !r.Taken {
		st.Skipped++
		for _, t := range mini {
			st.SkippedIDs = append(st.SkippedIDs, t.ID)
		}
		return nil
	}
	st.GradNorm += r.GradNorm
	st.Steps++
	if l.mode == SharedCritic {
		st.criticSteps++
		st.CriticGradNorm += r.GradNorm
	}
	return nil
}

// policyLoss is one micro-batch's loss of the policy: the policy loss
// algorithm.policy_loss names, the KL-to-reference term and the entropy
// bonus when they are on, and a shared value head's weighted value loss.
// Its terms and the micro-batch's diagnostics are reported to st through
// rep. With in.old oldFromForward, the training forward's logprobs and
// entropies are read back with the loss and appended to fwd.
func (l *Learner) policyLoss(s *torch.Scope, p Padded, in policyIn, st *Stats, rep *readback, fwd *[]forwardRows) (*torch.Tensor, error) {
	c, data, n := l.s, in.data, in.norm
	shared := l.mode == SharedCritic
	B, W := int64(len(p.Trs)), int64(p.Width())
	grid := func(f func(t *trajectory.Trajectory, j int) float32) *torch.Tensor { return s.Float32(p.Grid(f), B, W) }
	// A packed forward's logprobs off its targets are the old ones: the
	// ratio there is 1 (forward).
	var old *torch.Tensor
	if in.trainPolicy && in.old == oldRecomputed {
		old = grid(func(t *trajectory.Trajectory, j int) float32 { return data[t].Old[j] })
	}
	// The entropy's graph is built only when the entropy bonus weighs in.
	o, err := forward(s, l.policy, p, torch.ForwardOptions{Temperature: c.Temperature, Grad: true, Entropy: true,
		EntropyGrad: in.trainPolicy && c.Loss.EntropyCoef != 0, Values: shared}, torch.Output{LogProbs: old})
	if err != nil {
		return nil, OOMHint(fmt.Errorf("policy forward of %d trajectories (%d tokens): %w", len(p.Trs), p.Tokens(), err))
	}
	mask := grid(func(t *trajectory.Trajectory, j int) float32 { return LossMask(t, j, c.LossMask) })
	total := s.Scalar(0)
	if in.trainPolicy {
		if in.old == oldFromForward {
			old = s.Detach(o.LogProbs)
			rep.addRows(s.Stack(0, old, s.Detach(o.Entropy)), func(v []float32) {
				lp, ent := p.Unpack(v[:len(v)/2]), p.Unpack(v[len(v)/2:])
				for i, t := range p.Trs {
					*fwd = append(*fwd, forwardRows{t, lp[i], ent[i]})
				}
			})
		}
		adv := grid(func(t *trajectory.Trajectory, j int) float32 { return t.Advantages[j] })
		pin := loss.PolicyInputs{LogP: o.LogProbs, OldLogP: old, Adv: adv, Mask: mask}
		if data[p.Trs[0]].Weight != nil {
			pin.Weight = grid(func(t *trajectory.Trajectory, j int) float32 { return data[t].Weight[j] })
		}
		pg, err := loss.PolicyLoss(s, pin, c.Loss, n)
		if err != nil {
			return nil, err
		}
		total = s.Add(total, pg.Loss)
		rep.add(pg.ClipLow, func(v float64) { st.ClipFracLow += v })
		rep.add(pg.ClipHigh, func(v float64) { st.ClipFracHigh += v })
		rep.add(pg.Loss, func(v float64) { st.PolicyLoss += v })
		if c.Loss.KLInLoss && c.Loss.KLCoef != 0 && l.ref != nil {
			ref := grid(func(t *trajectory.Trajectory, j int) float32 { return data[t].Ref[j] })
			kl := loss.KLLoss(s, o.LogProbs, ref, mask, c.Loss.KLEstimator, c.Loss.Agg, n)
			total = s.Add(total, s.MulScalar(kl, c.Loss.KLCoef))
			rep.add(kl, func(v float64) { st.KLLoss += v })
		}
		if c.Loss.EntropyCoef != 0 {
			ent := loss.Aggregate(s, o.Entropy, mask, c.Loss.Agg, n)
			total = s.Sub(total, s.MulScalar(ent, c.Loss.EntropyCoef))
		}
		d := loss.Diagnose(s, o.LogProbs, old, o.Entropy, mask)
		rep.add(d.ApproxKL, func(v float64) { st.ApproxKL += v })
		rep.add(d.Entropy, func(v float64) { st.Entropy += v })
		rep.add(d.Tokens, func(v float64) { st.Tokens += int(v) })
	}
	if shared {
		vl := l.valueLoss(s, p, o.Values, mask, data, n)
		total = s.Add(total, s.MulScalar(vl, c.Loss.VFCoef))
		rep.add(vl, func(v float64) { st.ValueLoss += v })
	}
	return total, nil
}
