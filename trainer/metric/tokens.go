package metric

import (
	"math"

	"github.com/agentrl/agentrl/internal/stat"
	"github.com/agentrl/agentrl/trajectory"
)

// TokenStats summarise a per-token quantity over the selected tokens of a
// batch (what an update measures of its advantages and returns). Std is the population std (divide by N). With N == 0 every field
// but N is NaN.
type TokenStats struct {
	N                   int
	Mean, Std, Min, Max float64
}

// MaskedStats summarises xs[k][i] over the positions where masks[k][i] !=
// 0. Positions beyond either slice count as unselected, so a trajectory
// without the quantity (nil) adds nothing.
func MaskedStats(xs [][]float32, masks [][]uint8) TokenStats {
	s := TokenStats{Min: math.Inf(1), Max: math.Inf(-1)}
	var vals []float64
	each(xs, masks, func(x float64) {
		vals = append(vals, x)
		s.Min = min(s.Min, x)
		s.Max = max(s.Max, x)
	})
	s.N = len(vals)
	if s.N == 0 {
		nan := math.NaN()
		return TokenStats{Mean: nan, Std: nan, Min: nan, Max: nan}
	}
	s.Mean, s.Std = stat.MeanStd(vals, 0)
	return s
}

func each(xs [][]float32, masks [][]uint8, f func(x float64)) {
	for k := range min(len(xs), len(masks)) {
		for i := range min(len(xs[k]), len(masks[k])) {
			if masks[k][i] != 0 {
				f(float64(xs[k][i]))
			}
		}
	}
}

// AdvantageStats summarises the advantages over the action tokens.
func AdvantageStats(batch []*trajectory.Trajectory) TokenStats {
	return MaskedStats(column(batch, func(t *trajectory.Trajectory) []float32 { return t.Advantages }), masks(batch))
}

// ReturnStats summarises the returns over the action tokens.
func ReturnStats(batch []*trajectory.Trajectory) TokenStats {
	return MaskedStats(column(batch, func(t *trajectory.Trajectory) []float32 { return t.Returns }), masks(batch))
}

// ExplainedVarianceOf is 1 - Var[R - V] / Var[R] over the action tokens of
// the trajectories that have both values and returns (population
// variances), CleanRL ppo.py's diagnostic of how well the critic predicts
// the returns: 1 is perfect, 0 no better than a constant, negative worse.
// It is NaN when there is no such token or Var[R] is 0.
func ExplainedVarianceOf(batch []*trajectory.Trajectory) float64 {
	var rs, ds []float64
	for _, t := range batch {
		if len(t.Values) != len(t.Mask) || len(t.Returns) != len(t.Mask) {
			continue
		}
		for i, m := range t.Mask {
			if m != 0 {
				r := float64(t.Returns[i])
				rs, ds = append(rs, r), append(ds, r-float64(t.Values[i]))
			}
		}
	}
	if len(rs) == 0 {
		return math.NaN()
	}
	_, varR := stat.MeanVar(rs, 0)
	_, varD := stat.MeanVar(ds, 0)
	if varR == 0 {
		return math.NaN()
	}
	return 1 - varD/varR
}

func column(batch []*trajectory.Trajectory, f func(*trajectory.Trajectory) []float32) [][]float32 {
	out := make([][]float32, len(batch))
	for k, t := range batch {
		out[k] = f(t)
	}
	return out
}

func masks(batch []*trajectory.Trajectory) [][]uint8 {
	out := make([][]uint8, len(batch))
	for k, t := range batch {
		out[k] = t.Mask
	}
	return out
}
