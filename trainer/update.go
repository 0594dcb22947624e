package trainer

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/traj"
)

// tokenData are the per-token arrays an update needs besides the
// trajectory's own: the old policy's logprobs (recomputed before the
// update), the reference's logprobs (KL term) and the rollout-time values.
type tokenData struct {
	old, ref, values []float32
}

// updateConfig shapes one PPO-style update over an iteration's batch.
type updateConfig struct {
	Loss        algo.LossConfig
	Epochs      int
	MiniBatch   int
	MicroBatch  int
	LossMask    bool
	MaxGradNorm float64
	Temperature float64
	Critic      string // "none", "shared" (value head on the policy) or "separate"
	TrainPolicy bool   // false during critic warm-up
	// LR gives the learning rates of the optimizer step that follows
	// policySteps earlier policy steps of the run: the schedule advances
	// per optimizer step, not per iteration.
	LR func(policySteps int) (policy, critic float64)
	// StepsBefore is the number of policy steps the run took before this
	// update (the schedule's position at its start).
	StepsBefore int
}

// updater owns the models and optimizers an update changes. In a
// data-parallel job every rank walks the same mini-batches (same data, same
// shuffle), computes the gradient of its share of each (normalised by the
// whole mini-batch's token or sequence count), and the all-reduced sum is
// the gradient one process would get from the whole mini-batch; every rank
// then takes the same optimizer step.
type updater struct {
	policy, critic *torch.Model
	opt, criticOpt *torch.AdamW
	dist           *dist.Group
	cfg            updateConfig
	lastLR         float64 // the policy learning rate of the last step taken
}

// updateStats are the update's diagnostics: the losses are means over
// optimizer steps of each mini-batch's loss, the per-token figures
// (entropy, clip fractions, approximate KL) means over the loss tokens.
// While accumulating they are sums, which add up across ranks.
type updateStats struct {
	PolicyLoss, KLLoss, Entropy, ValueLoss float64
	ClipFracLow, ClipFracHigh, ApproxKL    float64
	GradNorm, CriticGradNorm               float64
	Steps, Skipped                         int
	SkippedIDs                             []string
	Tokens                                 int // loss tokens processed (per epoch pass)
	policySteps, criticSteps               int // policySteps counts skipped steps too
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// run updates on trs for cfg.Epochs passes of shuffled mini-batches, each
// split into micro-batches whose gradients accumulate before one optimizer
// step. A non-finite loss or gradient norm skips that step (the gradients
// are dropped) and records the batch's trajectory ids.
func (u *updater) run(trs []*traj.Trajectory, data map[*traj.Trajectory]*tokenData, rng *rand.Rand) (updateStats, error) {
	var st updateStats
	idx := make([]int, len(trs))
	for i := range idx {
		idx[i] = i
	}
	for epoch := 0; epoch < u.cfg.Epochs; epoch++ {
		rng.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		for lo := 0; lo < len(idx); lo += u.cfg.MiniBatch {
			mini := pick(trs, idx[lo:min(lo+u.cfg.MiniBatch, len(idx))])
			// The mini-batch's policy and critic steps share one point of
			// the schedule: the run's policy steps so far.
			if err := u.setLR(st.Steps); err != nil {
				return st, err
			}
			if u.cfg.TrainPolicy || u.cfg.Critic == "shared" {
				if err := u.policyStep(mini, data, &st); err != nil {
					return st, err
				}
			}
			if u.cfg.Critic == "separate" {
				if err := u.criticStep(mini, data, &st); err != nil {
					return st, err
				}
			}
		}
	}
	if err := u.sumStats(&st); err != nil {
		return st, err
	}
	if n := float64(st.policySteps); n > 0 {
		st.PolicyLoss /= n
		st.KLLoss /= n
		if u.cfg.Critic == "shared" {
			st.ValueLoss /= n
		}
	}
	if n := float64(st.Tokens); n > 0 {
		st.Entropy /= n
		st.ClipFracLow /= n
		st.ClipFracHigh /= n
		st.ApproxKL /= n
	}
	if st.Steps > 0 {
		st.GradNorm /= float64(st.Steps)
	}
	if st.criticSteps > 0 {
		st.CriticGradNorm /= float64(st.criticSteps)
		if u.cfg.Critic == "separate" {
			st.ValueLoss /= float64(st.criticSteps)
		}
	}
	return st, nil
}

// sumStats adds up the per-rank sums of the diagnostics (the step counts
// and gradient norms are already the same on every rank).
func (u *updater) sumStats(st *updateStats) error {
	if u.dist.World() == 1 {
		return nil
	}
	v := []float64{st.PolicyLoss, st.KLLoss, st.Entropy, st.ValueLoss, st.ClipFracLow, st.ClipFracHigh, st.ApproxKL,
		float64(st.Tokens)}
	if err := u.dist.Sum(v); err != nil {
		return err
	}
	st.PolicyLoss, st.KLLoss, st.Entropy, st.ValueLoss, st.ClipFracLow, st.ClipFracHigh, st.ApproxKL = v[0], v[1], v[2], v[3], v[4], v[5], v[6]
	st.Tokens = int(v[7])
	return nil
}

// reduce sums the gradients of params over the ranks and tells whether
// any rank saw a non-finite loss.
func (u *updater) reduce(params []*torch.Tensor, nonFinite bool) (bool, error) {
	if err := u.dist.AllReduceGrads(params); err != nil {
		return false, err
	}
	return u.dist.Any(nonFinite)
}

func norm(mini []*traj.Trajectory, useMask bool) algo.Norm {
	n := algo.Norm{Sequences: float64(len(mini))}
	for _, t := range mini {
		for j := 1; j < len(t.Tokens); j++ {
			n.Tokens += float64(lossMask(t, j, useMask))
		}
	}
	n.Tokens = math.Max(n.Tokens, 1)
	return n
}

// policyStep is one optimizer step of the policy (and a shared critic) on a
// mini-batch.
func (u *updater) policyStep(mini []*traj.Trajectory, data map[*traj.Trajectory]*tokenData, st *updateStats) error {
	st.policySteps++
	n := norm(mini, u.cfg.LossMask)
	nonFinite := false
	mine := dist.Shard(u.dist, mini)
	for _, mb := range microBatches(mine, u.cfg.MicroBatch) {
		p := padBatch(pick(mine, mb))
		ok, err := u.policyMicro(p, data, n, st)
		if err != nil {
			return err
		}
		nonFinite = nonFinite || !ok
	}
	nonFinite, err := u.reduce(u.opt.Params(), nonFinite)
	if err != nil {
		return err
	}
	gn, err := u.opt.ClipGradNormWith(u.cfg.MaxGradNorm, u.dist.Largest)
	if err != nil {
		return err
	}
	if nonFinite || !finite(gn) {
		st.Skipped++
		for _, t := range mini {
			st.SkippedIDs = append(st.SkippedIDs, t.ID)
		}
		return u.opt.ZeroGrad()
	}
	st.GradNorm += gn
	st.Steps++
	if u.cfg.Critic == "shared" {
		st.criticSteps++
		st.CriticGradNorm += gn
	}
	if err := u.opt.Step(); err != nil {
		return err
	}
	return u.opt.ZeroGrad()
}

// policyMicro runs forward and backward on one micro-batch, accumulating
// gradients; it reports false when the loss was not finite.
func (u *updater) policyMicro(p padded, data map[*traj.Trajectory]*tokenData, n algo.Norm, st *updateStats) (bool, error) {
	cfg := u.cfg
	shared := cfg.Critic == "shared"
	o, err := u.policy.Forward(p.batch, torch.ForwardOptions{Temperature: cfg.Temperature, Grad: true, Entropy: true,
		EntropyGrad: cfg.TrainPolicy && cfg.Loss.EntropyCoef != 0, Values: shared})
	if err != nil {
		return false, oomHint(fmt.Errorf("policy forward of %d trajectories (%d tokens): %w", len(p.trs), p.batch.T, err))
	}
	s := torch.NewScope()
	defer s.Close()
	s.Own(o.LogProbs, o.Entropy, o.Values)
	B, W := int64(len(p.trs)), int64(p.width())
	maskV := p.grid(func(t *traj.Trajectory, j int) float32 { return lossMask(t, j, cfg.LossMask) })
	advV := p.grid(func(t *traj.Trajectory, j int) float32 { return t.Advantages[j] })
	oldV := p.grid(func(t *traj.Trajectory, j int) float32 { return data[t].old[j] })
	mask := s.Float32(maskV, B, W)
	loss := s.Float32([]float32{0})
	if cfg.TrainPolicy {
		pg := algo.PolicyLoss(s, o.LogProbs, s.Float32(oldV, B, W), s.Float32(advV, B, W), mask, cfg.Loss, n)
		loss = s.Add(loss, pg)
		st.PolicyLoss += item(s, pg)
		if cfg.Loss.KLInLoss && cfg.Loss.KLCoef != 0 {
			refV := p.grid(func(t *traj.Trajectory, j int) float32 { return data[t].ref[j] })
			kl := algo.KLLoss(s, o.LogProbs, s.Float32(refV, B, W), mask, cfg.Loss.KLEstimator, cfg.Loss.Agg, n)
			loss = s.Add(loss, s.MulScalar(kl, cfg.Loss.KLCoef))
			st.KLLoss += item(s, kl)
		}
		if cfg.Loss.EntropyCoef != 0 {
			ent := algo.Aggregate(s, o.Entropy, mask, cfg.Loss.Agg, n)
			loss = s.Sub(loss, s.MulScalar(ent, cfg.Loss.EntropyCoef))
		}
		// Entropy and clip diagnostics per token, independent of the
		// mini-batch weighting.
		lp, err := o.LogProbs.Float32s()
		if err != nil {
			return false, err
		}
		d := algo.PolicyDiagnostics(lp, oldV, advV, maskV, cfg.Loss.ClipLow, cfg.Loss.ClipHigh)
		if d.Tokens > 0 {
			w := float64(d.Tokens)
			st.ClipFracLow += d.ClipFracLow * w
			st.ClipFracHigh += d.ClipFracHigh * w
			st.ApproxKL += d.ApproxKL * w
			st.Entropy += item(s, s.MaskedMean(o.Entropy, mask)) * w
			st.Tokens += d.Tokens
		}
	}
	if shared {
		vl := u.valueLoss(s, p, o.Values, mask, data, n)
		loss = s.Add(loss, s.MulScalar(vl, cfg.Loss.VFCoef))
		st.ValueLoss += item(s, vl)
	}
	if err := s.Err(); err != nil {
		return false, fmt.Errorf("policy loss: %w", err)
	}
	lv, err := loss.Item()
	if err != nil {
		return false, err
	}
	if !finite(lv) {
		return false, nil
	}
	if err := loss.Backward(); err != nil {
		return false, oomHint(fmt.Errorf("policy backward of %d trajectories (%d tokens): %w", len(p.trs), p.batch.T, err))
	}
	return true, nil
}

func (u *updater) valueLoss(s *torch.Scope, p padded, values, mask *torch.Tensor, data map[*traj.Trajectory]*tokenData, n algo.Norm) *torch.Tensor {
	B, W := int64(len(p.trs)), int64(p.width())
	oldV := p.grid(func(t *traj.Trajectory, j int) float32 { return data[t].values[j] })
	retV := p.grid(func(t *traj.Trajectory, j int) float32 { return t.Returns[j] })
	return algo.ValueLoss(s, values, s.Float32(oldV, B, W), s.Float32(retV, B, W), mask, u.cfg.Loss.ValueClip, u.cfg.Loss.Agg, n)
}

// criticStep is one optimizer step of a separate critic on a mini-batch.
func (u *updater) criticStep(mini []*traj.Trajectory, data map[*traj.Trajectory]*tokenData, st *updateStats) error {
	n := norm(mini, u.cfg.LossMask)
	bad := false
	var total float64
	mine := dist.Shard(u.dist, mini)
	for _, mb := range microBatches(mine, u.cfg.MicroBatch) {
		p := padBatch(pick(mine, mb))
		o, err := u.critic.Forward(p.batch, torch.ForwardOptions{Grad: true, Values: true, ValuesOnly: true})
		if err != nil {
			return oomHint(fmt.Errorf("critic forward of %d trajectories: %w", len(mb), err))
		}
		s := torch.NewScope()
		s.Own(o.LogProbs, o.Values)
		maskV := p.grid(func(t *traj.Trajectory, j int) float32 { return lossMask(t, j, u.cfg.LossMask) })
		vl := u.valueLoss(s, p, o.Values, s.Float32(maskV, int64(len(p.trs)), int64(p.width())), data, n)
		if err := s.Err(); err != nil {
			s.Close()
			return fmt.Errorf("value loss: %w", err)
		}
		v := item(s, vl)
		total += v
		if !finite(v) {
			bad = true
		} else if err := vl.Backward(); err != nil {
			s.Close()
			return fmt.Errorf("critic backward: %w", err)
		}
		s.Close()
	}
	bad, err := u.reduce(u.criticOpt.Params(), bad)
	if err != nil {
		return err
	}
	gn, err := u.criticOpt.ClipGradNormWith(u.cfg.MaxGradNorm, u.dist.Largest)
	if err != nil {
		return err
	}
	if bad || !finite(gn) {
		st.Skipped++
		return u.criticOpt.ZeroGrad()
	}
	st.ValueLoss += total
	st.CriticGradNorm += gn
	st.criticSteps++
	if err := u.criticOpt.Step(); err != nil {
		return err
	}
	return u.criticOpt.ZeroGrad()
}

// setLR sets the learning rates of the next optimizer step, the one after
// stepsDone policy steps of this update: the policy's (group 0 of the
// policy optimizer), a shared value head's (its group 1) and a separate
// critic's.
func (u *updater) setLR(stepsDone int) error {
	if u.cfg.LR == nil {
		return nil
	}
	lr, clr := u.cfg.LR(u.cfg.StepsBefore + stepsDone)
	u.lastLR = lr
	if err := u.opt.SetLR(0, lr); err != nil {
		return err
	}
	if err := u.opt.SetLR(1, clr); err != nil {
		return err
	}
	if u.criticOpt != nil {
		return u.criticOpt.SetLR(0, clr)
	}
	return nil
}

// item reads a scalar, NaN when the scope has failed.
func item(s *torch.Scope, x *torch.Tensor) float64 {
	if s.Err() != nil || x == nil {
		return math.NaN()
	}
	v, err := x.Item()
	if err != nil {
		return math.NaN()
	}
	return v
}
