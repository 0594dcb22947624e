package learner

import (
	"math"

	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/metric"
)

// AddMetrics adds the update's figures to m: the data it started from,
// its diagnostics and the advantage statistics of the batch it learned
// from; critic adds the value function's.
func (r UpdateResult) AddMetrics(m map[string]float64, critic bool) {
	m[metric.GroupRewardStd] = r.GroupRewardStd
	m[metric.GroupsDropped] = float64(r.GroupsDropped)
	mm := r.Mismatch
	m[metric.LogprobMismatchMax] = mm.MaxAbsDiff
	m[metric.MismatchKL], m[metric.MismatchRatioMax], m[metric.MismatchRatioMin], m[metric.MismatchBeyond] = mm.KL, mm.RatioMax, mm.RatioMin, mm.BeyondBound
	if !math.IsNaN(r.WeightMean) {
		m[metric.RolloutWeightMean] = r.WeightMean
	}
	if r.HasRef {
		m[metric.KLRef] = r.KLRef
	}
	m[metric.LR] = r.LR
	m[metric.PolicyLoss] = r.PolicyLoss
	m[metric.KLLoss] = r.KLLoss
	m[metric.Entropy] = r.Entropy
	m[metric.ClipFracLow] = r.ClipFracLow
	m[metric.ClipFracHigh] = r.ClipFracHigh
	m[metric.ApproxKL] = r.ApproxKL
	if r.RouterAux {
		m[metric.RouterAuxLoss] = r.RouterAuxLoss
	}
	m[metric.GradNorm] = r.GradNorm
	m[metric.OptimizerSteps] = float64(r.Steps)
	m[metric.SkippedUpdates] = float64(r.Skipped)
	m[metric.UpdateTokens], m[metric.UpdateTokensNaive] = float64(r.UpdateTokens), float64(r.SampleTokens)
	a := algo.AdvantageStats(r.Trained)
	m[metric.AdvMean], m[metric.AdvStd], m[metric.AdvMin], m[metric.AdvMax] = a.Mean, a.Std, a.Min, a.Max
	ret := algo.ReturnStats(r.Trained)
	m[metric.ReturnMean] = ret.Mean
	if critic {
		m[metric.ValueLoss] = r.ValueLoss
		m[metric.CriticGradNorm] = r.CriticGradNorm
		m[metric.ExplainedVariance] = algo.ExplainedVariance(r.Trained)
	}
}
