package algo

import (
	"fmt"
	"math"
)

// KLFunc estimates, from one sampled token, the KL divergence
// KL(pi || pi_ref) given the token's log-probability under the policy (lp)
// and under the reference (lpRef).
type KLFunc func(lp, lpRef float64) float64

// KLEstimator returns one of Schulman's single-sample KL approximations
// (J. Schulman, "Approximating KL Divergence", 2020,
// http://joschu.net/blog/kl-approx.html; verl: core_algos.kl_penalty), with
// log r = lpRef - lp:
//
//	k1 = -log r = lp - lpRef                  unbiased, high variance, can be negative
//	k2 = (log r)^2 / 2                        biased, low variance, >= 0
//	k3 = (r - 1) - log r = exp(lpRef - lp) - (lpRef - lp) - 1   unbiased, low variance, >= 0
//
// The formulas are applied as written, with no clamping (verl clamps k3's
// log-ratio to [-20, 20] and its value to [-10, 10]).
func KLEstimator(name string) (KLFunc, error) {
	switch name {
	case "k1":
		return func(lp, lpRef float64) float64 { return lp - lpRef }, nil
	case "k2":
		return func(lp, lpRef float64) float64 { d := lp - lpRef; return 0.5 * d * d }, nil
	case "k3":
		// bounded as KLLoss bounds it (verl's low_var_kl)
		return func(lp, lpRef float64) float64 {
			d := math.Max(-MaxLogRatio, math.Min(MaxLogRatio, lpRef-lp))
			return math.Min(MaxK3, math.Exp(d)-d-1)
		}, nil
	}
	return nil, fmt.Errorf("unknown kl estimator %q (known: k1, k2, k3)", name)
}

// TokenKL applies kl to every action token (mask 1) of a trajectory and
// gives 0 elsewhere: the per-token penalty slice the estimators take for
// KL-in-reward, and the raw material of KL diagnostics. logp, logpRef and
// mask must have the same length.
func TokenKL(kl KLFunc, logp, logpRef []float32, mask []uint8) ([]float32, error) {
	if len(logp) != len(mask) || len(logpRef) != len(mask) {
		return nil, fmt.Errorf("token kl: %d logprobs, %d reference logprobs, %d mask bits", len(logp), len(logpRef), len(mask))
	}
	out := make([]float32, len(mask))
	for i, m := range mask {
		if m != 0 {
			out[i] = float32(kl(float64(logp[i]), float64(logpRef[i])))
		}
	}
	return out, nil
}
