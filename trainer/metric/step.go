package metric

import (
	"math"

	"github.com/agentrl/agentrl/trajectory"
)

// Losses are what an update's optimizer steps measure: the losses are
// means over optimizer steps of each mini-batch's loss, the per-token
// figures (entropy, clip fractions, approximate KL) means over the loss
// tokens. While the learner accumulates them they are sums, which add up
// across ranks (Sums, SetSums); Mean turns them into means.
type Losses struct {
	PolicyLoss, KLLoss, Entropy, ValueLoss float64
	ClipFracLow, ClipFracHigh, ApproxKL    float64
	GradNorm, CriticGradNorm               float64
	// RouterAuxLoss is the routers' load-balancing loss of a policy with
	// mixture-of-experts layers whose config asks for it in the loss
	// (output_router_logits; RouterAux then), mean over optimizer steps.
	RouterAuxLoss float64
	RouterAux     bool
	// Steps are the policy optimizer steps taken, Skipped those skipped;
	// PolicySteps counts both, CriticSteps the critic's (a shared value
	// head's with the policy's).
	Steps, Skipped           int
	PolicySteps, CriticSteps int
	Tokens                   int // loss tokens processed (per epoch pass)
	// UpdateTokens are the tokens the policy's training forwards ran
	// through the model over all epochs, a packed episode's shared
	// prefixes once (algorithm.pack_segments); SampleTokens the same
	// trajectories' tokens as samples of their own. Padding is left out.
	UpdateTokens, SampleTokens int
	LR                         float64 // the policy learning rate of the last step
}

// Mean turns the sums into means: the losses over policy steps (the
// value loss over them too with sharedValue, a value head trained with
// the policy; over the critic's steps otherwise), the per-token figures
// over the loss tokens, the gradient norms over the steps taken.
func (l *Losses) Mean(sharedValue bool) {
	if n := float64(l.PolicySteps); n > 0 {
		l.PolicyLoss /= n
		l.KLLoss /= n
		l.RouterAuxLoss /= n
		if sharedValue {
			l.ValueLoss /= n
		}
	}
	if n := float64(l.Tokens); n > 0 {
		l.Entropy /= n
		l.ClipFracLow /= n
		l.ClipFracHigh /= n
		l.ApproxKL /= n
	}
	if l.Steps > 0 {
		l.GradNorm /= float64(l.Steps)
	}
	if l.CriticSteps > 0 {
		l.CriticGradNorm /= float64(l.CriticSteps)
		if !sharedValue {
			l.ValueLoss /= float64(l.CriticSteps)
		}
	}
}

// Sums are the sums that add up across ranks (the step counts and
// gradient norms are already the same on every rank), in SetSums' order.
func (l Losses) Sums() []float64 {
	return []float64{l.PolicyLoss, l.KLLoss, l.Entropy, l.ValueLoss, l.ClipFracLow, l.ClipFracHigh, l.ApproxKL,
		float64(l.Tokens), float64(l.UpdateTokens), float64(l.SampleTokens), l.RouterAuxLoss}
}

// SetSums sets the sums from v, in Sums' order.
func (l *Losses) SetSums(v []float64) {
	l.PolicyLoss, l.KLLoss, l.Entropy, l.ValueLoss, l.ClipFracLow, l.ClipFracHigh, l.ApproxKL = v[0], v[1], v[2], v[3], v[4], v[5], v[6]
	l.Tokens, l.UpdateTokens, l.SampleTokens, l.RouterAuxLoss = int(v[7]), int(v[8]), int(v[9]), v[10]
}

// Learned are the figures of the data an update learned from.
type Learned struct {
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
	Mismatch Mismatch
	// WeightMean is the mean rollout-correction weight over the policy's
	// tokens, NaN without a correction.
	WeightMean float64
	// KLRef is the mean per-token KL of the policy to the reference (k1,
	// k2 or k3 as set); HasRef is false when there is no reference.
	KLRef  float64
	HasRef bool
}

// With says which optional figures of an update the run records: a
// critic's, the overlong buffer's penalty, overlong filtering's count.
type With struct {
	Critic, OverlongPenalty, OverlongFilter bool
}

// Step adds what an update measured to m: the data it started from, its
// losses and diagnostics, the advantage statistics of the batch it
// learned from and, as w says, the critic's and the overlong figures.
func Step(m map[string]float64, l Losses, d Learned, w With) {
	m[GroupRewardStd] = d.GroupRewardStd
	m[GroupsDropped] = float64(d.GroupsDropped)
	mm := d.Mismatch
	m[LogprobMismatchMax] = mm.MaxAbsDiff
	m[MismatchKL], m[MismatchRatioMax], m[MismatchRatioMin], m[MismatchBeyond] = mm.KL, mm.RatioMax, mm.RatioMin, mm.BeyondBound
	if !math.IsNaN(d.WeightMean) {
		m[RolloutWeightMean] = d.WeightMean
	}
	if d.HasRef {
		m[KLRef] = d.KLRef
	}
	m[LR] = l.LR
	m[PolicyLoss] = l.PolicyLoss
	m[KLLoss] = l.KLLoss
	m[Entropy] = l.Entropy
	m[ClipFracLow] = l.ClipFracLow
	m[ClipFracHigh] = l.ClipFracHigh
	m[ApproxKL] = l.ApproxKL
	if l.RouterAux {
		m[RouterAuxLoss] = l.RouterAuxLoss
	}
	m[GradNorm] = l.GradNorm
	m[OptimizerSteps] = float64(l.Steps)
	m[SkippedUpdates] = float64(l.Skipped)
	m[UpdateTokens], m[UpdateTokensNaive] = float64(l.UpdateTokens), float64(l.SampleTokens)
	a := AdvantageStats(d.Trained)
	m[AdvMean], m[AdvStd], m[AdvMin], m[AdvMax] = a.Mean, a.Std, a.Min, a.Max
	m[ReturnMean] = ReturnStats(d.Trained).Mean
	if w.Critic {
		m[ValueLoss] = l.ValueLoss
		m[CriticGradNorm] = l.CriticGradNorm
		m[ExplainedVariance] = ExplainedVarianceOf(d.Trained)
	}
	if w.OverlongPenalty {
		m[OverlongPenalty] = d.OverlongPenalty
	}
	if w.OverlongFilter {
		m[OverlongMasked] = float64(d.OverlongMasked)
	}
}
