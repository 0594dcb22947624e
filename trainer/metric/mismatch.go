package metric

import (
	"fmt"
	"math"
)

// Mismatch measures how far the rollout engine's log-probabilities (the
// behaviour policy, recorded while sampling) are from the training
// forward's recomputed ones over the action tokens of a batch. bf16
// decoding, another kernel or, on a GPU, another attention make them
// differ; a correct pipeline keeps the difference at rounding level.
// With r_t = pi_train(a_t)/pi_behaviour(a_t):
//
//	KL          mean of k3 = (r - 1) - log r: KL(pi_behaviour || pi_train) estimated
//	            from the behaviour's own samples (Schulman's k3, as algo's KL estimators)
//	RatioMax    the largest r
//	RatioMin    the smallest r
//	BeyondBound the fraction of tokens with r outside [1/C, C]: those truncated
//	            importance sampling caps (r > C) or masked importance sampling drops
//	MaxAbsDiff  the largest |log pi_train - log pi_behaviour|
//
// Tokens counts the action tokens measured; with none every figure is NaN
// (MaxAbsDiff 0).
type Mismatch struct {
	Tokens                              int
	KL, RatioMax, RatioMin, BeyondBound float64
	MaxAbsDiff                          float64
}

// MeasureMismatch measures the mismatch over the tokens where masks[k][i]
// is 1, between behaviour[k][i] and train[k][i]. A trajectory whose
// arrays do not cover its mask (no behaviour logprobs recorded) is left
// out. bound is C. The log-ratio is clamped to [-clamp, clamp], as the
// losses clamp it (algo.MaxLogRatio).
func MeasureMismatch(behaviour, train [][]float32, masks [][]uint8, bound, clamp float64) Mismatch {
	m := Mismatch{RatioMax: math.Inf(-1), RatioMin: math.Inf(1)}
	var kl float64
	beyond := 0
	for k, mask := range masks {
		if k >= len(behaviour) || k >= len(train) || len(behaviour[k]) < len(mask) || len(train[k]) < len(mask) {
			continue
		}
		for i, bit := range mask {
			if bit != 1 {
				continue
			}
			d := float64(train[k][i]) - float64(behaviour[k][i])
			m.MaxAbsDiff = math.Max(m.MaxAbsDiff, math.Abs(d))
			d = math.Max(-clamp, math.Min(clamp, d))
			r := math.Exp(d)
			kl += r - 1 - d
			m.RatioMax, m.RatioMin = math.Max(m.RatioMax, r), math.Min(m.RatioMin, r)
			if r > bound || r < 1/bound {
				beyond++
			}
			m.Tokens++
		}
	}
	if m.Tokens == 0 {
		nan := math.NaN()
		return Mismatch{KL: nan, RatioMax: nan, RatioMin: nan, BeyondBound: nan}
	}
	m.KL = kl / float64(m.Tokens)
	m.BeyondBound = float64(beyond) / float64(m.Tokens)
	return m
}

// Warning is the log message of an iteration whose mismatch KL exceeds
// threshold, naming the iteration and the figures, or "" when it does
// not (or threshold is 0, off). A KL that high means the engine and the
// trainer compute different distributions: a bug to find (a different
// temperature, misaligned tokens, a stale weight copy), not noise for the
// correction to absorb.
func (m Mismatch) Warning(iteration int, threshold float64) string {
	if threshold <= 0 || !(m.KL > threshold) {
		return ""
	}
	return fmt.Sprintf("iteration %d: rollout/training mismatch KL %.4g exceeds %.4g (ratio pi_train/pi_behaviour in [%.4g, %.4g], %.2f%% of %d action tokens beyond the bound, largest logprob gap %.4g): the rollout engine and the training forward disagree",
		iteration, m.KL, threshold, m.RatioMin, m.RatioMax, 100*m.BeyondBound, m.Tokens, m.MaxAbsDiff)
}
