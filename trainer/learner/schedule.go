package learner

import "math"

// Schedule is a run's learning-rate schedule over its policy optimizer
// steps: a linear warm-up from base/Warmup to base over the first Warmup
// steps, then Shape ("constant", or "" for the same; "cosine"; "linear")
// from base down to base*MinRatio at step Total, held there after.
type Schedule struct {
	Shape    string
	Warmup   int     // warm-up steps (optim.warmup_steps)
	Total    int     // the run's optimizer steps
	MinRatio float64 // the final rate over base (optim.min_lr_ratio)
}

// At is the learning rate of the optimizer step that follows step earlier
// steps, for a base rate base.
func (s Schedule) At(base float64, step int) float64 {
	if s.Warmup > 0 && step < s.Warmup {
		return base * (float64(step+1) / float64(s.Warmup))
	}
	frac := math.Min(1, float64(step-s.Warmup)/math.Max(1, float64(s.Total-s.Warmup)))
	switch s.Shape {
	case "cosine":
		return base * (s.MinRatio + (1-s.MinRatio)*0.5*(1+math.Cos(math.Pi*frac)))
	case "linear":
		return base * (1 - (1-s.MinRatio)*frac)
	}
	return base
}
