package learner

import (
	"fmt"
	"math"
	"time"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/loss"
	"github.com/agentrl/agentrl/trajectory"
)

// Result is what an update did: its diagnostics and the figures of the
// data it started from.
type Result struct {
	Stats
	// Trained is the batch the losses learned from: after the variance
	// filter (the trajectories that got advantages), less the episodes
	// overlong filtering masked.
	Trained        []*trajectory.Trajectory
	GroupRewardStd float64 // the mean within-group reward std of the whole batch
	GroupsDropped  int     // groups the variance filter dropped
	// OverlongPenalty is the mean soft overlong penalty added to the
	// batch's rewards (0 without the buffer); OverlongMasked counts the
	// episodes overlong filtering took out of the policy loss.
	OverlongPenalty float64
	OverlongMasked  int
	// Mismatch compares the behaviour logprobs (recorded while sampling)
	// with the old ones (the training forward's) over the policy's tokens:
	// the rollout/training mismatch (its MaxAbsDiff is 0 when rollout and
	// training compute the same distribution).
	Mismatch algo.Mismatch
	// OldFromStep is true when the old logprobs (and the trajectories'
	// TrainLogprobs and Entropies) came from the training forward of the
	// update's one optimizer step, false when a pass of their own
	// recomputed them before it (oldFromStep says when).
	OldFromStep bool
	// WeightMean is the mean rollout-correction weight over the policy's
	// tokens, NaN without a correction.
	WeightMean float64
	// KLRef is the mean per-token KL of the policy to the reference (k1,
	// k2 or k3 as set); HasRef is false when there is no reference.
	KLRef  float64
	HasRef bool
}

// Update learns from an iteration's batch, in CleanRL's order: the
// variance filter, the old and reference logprobs and the values, the KL
// to the reference, the advantages, then epochs of shuffled mini-batches,
// each split into micro-batches whose gradients accumulate before one
// optimizer step. Iterations up to the critic's warm-up train the critic
// alone. When the update is on-policy (oldFromStep) the old logprobs come
// from the training forward of its one step instead, and the mismatch and
// the KL to the reference are measured after it. A non-finite loss or
// gradient norm skips its step (its gradients are dropped) and records
// the mini-batch's trajectory ids. The result's Timing says where the
// time went.
func (l *Learner) Update(iter int, batch []*trajectory.Trajectory) (Result, error) {
	var r Result
	// DAPO's soft overlong punishment is part of the reward.
	r.OverlongPenalty = l.s.Overlong.PunishOverlong(batch)
	// RAGEN filters rollouts before computing anything on them.
	r.GroupRewardStd = algo.GroupRewardStd(batch)
	train, dropped := algo.FilterGroupsByVariance(batch, l.s.FilterKeepRatio)
	r.GroupsDropped = dropped
	trainPolicy := iter > l.s.CriticWarmup || l.critic == nil
	r.OldFromStep = l.oldFromStep(train, trainPolicy)
	start := time.Now()
	data, err := l.prepare(train, r.OldFromStep)
	if err != nil {
		return r, err
	}
	prepared := time.Now()
	// Without old logprobs yet (r.OldFromStep), the mismatch and the KL to
	// the reference are measured after the step, and there is no
	// correction.
	if !r.OldFromStep {
		r.Mismatch = mismatch(train, data, l.s.RolloutBound)
	}
	if r.WeightMean, err = l.correct(train, data); err != nil {
		return r, err
	}
	var kl [][]float32
	if !r.OldFromStep {
		if kl, err = l.referenceKL(train, data, &r); err != nil {
			return r, err
		}
	}
	est, err := algo.Get(l.s.Estimator)
	if err != nil {
		return r, err
	}
	if !l.s.KLInReward {
		kl = nil
	}
	if err := est.Advantages(train, kl, l.s.Advantage); err != nil {
		return r, err
	}
	advantaged := time.Now()
	// DAPO's overlong filtering: the truncated episodes counted in their
	// groups' advantages, and leave the batch the losses see.
	learned, masked := l.s.Overlong.FilterOverlong(train)
	r.Trained, r.OverlongMasked = learned, masked
	old := oldRecomputed
	if r.OldFromStep {
		old = oldFromForward
	}
	if r.Stats, err = l.epochs(learned, data, trainPolicy, old); err != nil {
		return r, err
	}
	r.Timing.Prepare, r.Timing.Advantages = prepared.Sub(start), advantaged.Sub(prepared)
	if r.OldFromStep {
		measured := time.Now()
		if err := l.gatherOld(learned, data); err != nil {
			return r, err
		}
		r.Mismatch = mismatch(learned, data, l.s.RolloutBound)
		if _, err := l.referenceKL(learned, data, &r); err != nil {
			return r, err
		}
		r.Timing.Advantages += time.Since(measured)
	}
	l.steps += r.Steps
	return r, nil
}

// mismatch measures the rollout/training mismatch of the batch: the
// behaviour logprobs against the recomputed old ones, on the action
// tokens.
func mismatch(train []*trajectory.Trajectory, data TokenTable, bound float64) algo.Mismatch {
	behaviour, old, masks := make([][]float32, len(train)), make([][]float32, len(train)), make([][]uint8, len(train))
	for i, tr := range train {
		behaviour[i], old[i], masks[i] = tr.Logprobs, data[tr].Old, tr.Mask
	}
	return algo.MeasureMismatch(behaviour, old, masks, bound)
}

// correct sets each trajectory's rollout-correction weights (the
// settings' RolloutCorrection, none when "" or "off") and returns their
// mean over the action tokens (NaN without a correction).
func (l *Learner) correct(train []*trajectory.Trajectory, data TokenTable) (float64, error) {
	mode := l.s.RolloutCorrection
	if mode == "" || mode == "off" {
		return math.NaN(), nil
	}
	sum, n := 0.0, 0
	for _, tr := range train {
		w, err := algo.RolloutWeights(tr.Logprobs, data[tr].Old, tr.Mask, mode, l.s.RolloutBound)
		if err != nil {
			return 0, fmt.Errorf("trajectory %s: %w", tr.ID, err)
		}
		data[tr].Weight = w
		for j, m := range tr.Mask {
			if m == 1 {
				sum += float64(w[j])
				n++
			}
		}
	}
	if n == 0 {
		return math.NaN(), nil
	}
	return sum / float64(n), nil
}

// referenceKL is the per-token KL of the old policy to the reference,
// loss.TokenKL on the policy's tokens and 0 elsewhere (nil without a
// reference); its mean over the policy's tokens goes to r. It is computed
// in f64 on the CPU.
func (l *Learner) referenceKL(train []*trajectory.Trajectory, data TokenTable, r *Result) ([][]float32, error) {
	if l.ref == nil || len(train) == 0 {
		return nil, nil
	}
	p := PadBatch(train)
	B, W := int64(len(train)), int64(p.Width())
	s := torch.NewScope()
	defer s.Close()
	grid := func(f func(t *trajectory.Trajectory, j int) float32) *torch.Tensor {
		return s.To(s.Float32(p.Grid(f), B, W), torch.CPU, torch.Float64)
	}
	old := grid(func(t *trajectory.Trajectory, j int) float32 { return data[t].Old[j] })
	ref := grid(func(t *trajectory.Trajectory, j int) float32 { return data[t].Ref[j] })
	k := loss.TokenKL(s, old, ref, l.s.KLEstimator)
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("kl to the reference: %w", err)
	}
	v, err := k.Float32s()
	if err != nil {
		return nil, err
	}
	var sum float64
	var n int
	kl := p.Unpack(v)
	for i, tr := range train {
		for j, mk := range tr.Mask {
			if mk != 1 {
				kl[i][j] = 0
				continue
			}
			sum += float64(kl[i][j])
			n++
		}
	}
	r.HasRef = true
	if n > 0 {
		r.KLRef = sum / float64(n)
	}
	return kl, nil
}

// epochs runs the epochs of shuffled mini-batches: per mini-batch one
// step of the policy (and a shared value head), or of the value head
// alone during the critic's warm-up, then one of a separate critic. old
// says where the policy steps' old logprobs come from. With packing on
// the episodes are shuffled, and a mini-batch holds whole episodes
// (miniBatches).
func (l *Learner) epochs(trs []*trajectory.Trajectory, data TokenTable, trainPolicy bool, old oldSource) (Stats, error) {
	var st Stats
	units := unitsOf(trs, l.s.PackSegments)
	for epoch := 0; epoch < l.s.Epochs; epoch++ {
		l.rand.Shuffle(len(units), func(a, b int) { units[a], units[b] = units[b], units[a] })
		for _, idx := range miniBatches(units, l.s.MiniBatch) {
			mini := Pick(trs, idx)
			// The mini-batch's policy and critic steps share one point of
			// the schedule: the run's policy steps so far.
			if err := l.setLR(&st); err != nil {
				return st, err
			}
			if trainPolicy || l.mode == SharedCritic {
				if err := l.policyStep(mini, data, trainPolicy, old, &st); err != nil {
					return st, err
				}
			}
			if l.mode == SeparateCritic {
				if err := l.criticStep(mini, data, &st); err != nil {
					return st, err
				}
			}
		}
	}
	return st, l.finish(&st)
}

// miniBatches fills mini-batches of at most n trajectories with whole
// units (an episode's segments, or one trajectory), in order; a unit of
// more than n fills one alone.
func miniBatches(units [][]int, n int) [][]int {
	var out [][]int
	var cur []int
	for _, u := range units {
		if len(cur) > 0 && len(cur)+len(u) > n {
			out = append(out, cur)
			cur = nil
		}
		cur = append(cur, u...)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// norm is the mini-batch's loss normaliser.
func (l *Learner) norm(mini []*trajectory.Trajectory) algo.Norm {
	n := Norm(mini, l.s.LossMask)
	n.Horizon = float64(l.s.Loss.Horizon)
	return n
}

// setLR sets the learning rates of the next optimizer step, the one after
// the run's policy steps so far (Schedule.At): the policy's (group 0 of
// the policy optimizer), a shared value head's (its group 1) and a
// separate critic's.
func (l *Learner) setLR(st *Stats) error {
	step := l.steps + st.Steps
	lr, clr := l.s.Schedule.At(l.s.PolicyOptim.LR, step), l.s.Schedule.At(l.s.CriticOptim.LR, step)
	st.LR = lr
	if err := l.opt.SetLR(0, lr); err != nil {
		return err
	}
	if err := l.opt.SetLR(1, clr); err != nil {
		return err
	}
	if l.criticOpt != nil {
		return l.criticOpt.SetLR(0, clr)
	}
	return nil
}
