package algo

import (
	"fmt"
	"math"
)

// RolloutCorrections are the corrections of the rollout/training mismatch
// (algorithm.rollout_correction once "auto" is resolved): none, truncated
// importance sampling and masked importance sampling, at token or
// sequence level.
var RolloutCorrections = []string{"off", "tis", "tis_seq", "mis", "mis_seq"}

// RolloutWeights are the weights the policy-gradient term of each token of
// a trajectory is multiplied by, correcting for the rollout engine's
// sampling distribution pi_behaviour (the behaviour logprobs) differing
// from the training forward's pi_old (train, the recomputed logprobs).
// With r_t = pi_old(a_t)/pi_behaviour(a_t) over the action tokens (mask
// 1) and the sequence ratio rho = prod_t r_t, for bound C:
//
//	tis      w_t = min(r_t, C)                     truncated IS (Yao et al. 2025, "Your
//	                                               Efficient RL Framework Secretly Brings You
//	                                               Off-Policy RL Training"; verl tis_imp_ratio_cap)
//	tis_seq  w_t = min(rho, C)
//	mis      w_t = r_t if 1/C <= r_t <= C, else 0  masked IS: the token is dropped
//	                                               (IcePop, Ling Team 2025)
//	mis_seq  w_t = rho if 1/C <= rho <= C, else 0  the whole sequence is dropped
//	off      nil
//
// Every other token weighs 1. With identical engines r_t = exp(0) = 1 and
// every weight is exactly 1. A dropped token still counts in the loss's
// normaliser (as a PPO-clipped token does): only its gradient goes. The
// log-ratios are clamped to [-MaxLogRatio, MaxLogRatio]; a sequence's sum
// is not, so rho may be 0 or +Inf, which tis caps and mis drops.
func RolloutWeights(behaviour, train []float32, mask []uint8, mode string, bound float64) ([]float32, error) {
	if mode == "off" {
		return nil, nil
	}
	if !(bound > 1) {
		return nil, fmt.Errorf("rollout correction bound %v, want > 1", bound)
	}
	if len(behaviour) < len(mask) || len(train) < len(mask) {
		return nil, fmt.Errorf("rollout correction: %d behaviour and %d training logprobs for %d tokens", len(behaviour), len(train), len(mask))
	}
	logR := make([]float64, len(mask))
	seq := 0.0
	for i, m := range mask {
		if m == 1 {
			logR[i] = math.Max(-MaxLogRatio, math.Min(MaxLogRatio, float64(train[i])-float64(behaviour[i])))
			seq += logR[i]
		}
	}
	rho := math.Exp(seq)
	w := make([]float32, len(mask))
	for i, m := range mask {
		w[i] = 1
		if m != 1 {
			continue
		}
		switch mode {
		case "tis":
			w[i] = float32(math.Min(math.Exp(logR[i]), bound))
		case "tis_seq":
			w[i] = float32(math.Min(rho, bound))
		case "mis":
			w[i] = float32(inBand(math.Exp(logR[i]), bound))
		case "mis_seq":
			w[i] = float32(inBand(rho, bound))
		default:
			return nil, fmt.Errorf("unknown rollout correction %q (known: off, tis, tis_seq, mis, mis_seq)", mode)
		}
	}
	return w, nil
}

// inBand is r when it lies in [1/C, C], else 0.
func inBand(r, bound float64) float64 {
	if r < 1/bound || r > bound {
		return 0
	}
	return r
}
