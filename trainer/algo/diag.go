package algo

import "math"

// PolicyDiag are the diagnostics of a policy update CleanRL logs: the
// fraction of tokens clipped on each side and the approximate KL between
// the old and the new policy.
type PolicyDiag struct {
	ClipFracLow  float64 // A < 0 and ratio < 1 - eps_low: the low clip bit
	ClipFracHigh float64 // A > 0 and ratio > 1 + eps_high: the high clip bit
	ApproxKL     float64 // mean of (r - 1) - log r (Schulman's k3), over the tokens
	Tokens       int
}

// PolicyDiagnostics computes PolicyDiag over the masked tokens of
// flattened per-token slices.
func PolicyDiagnostics(logp, oldLogp, adv []float32, mask []float32, clipLow, clipHigh float64) PolicyDiag {
	var d PolicyDiag
	var low, high, kl float64
	for i, m := range mask {
		if m == 0 {
			continue
		}
		lr := float64(logp[i]) - float64(oldLogp[i])
		r := math.Exp(lr)
		if adv[i] < 0 && r < 1-clipLow {
			low++
		}
		if adv[i] > 0 && r > 1+clipHigh {
			high++
		}
		kl += (r - 1) - lr
		d.Tokens++
	}
	if d.Tokens > 0 {
		n := float64(d.Tokens)
		d.ClipFracLow, d.ClipFracHigh, d.ApproxKL = low/n, high/n, kl/n
	}
	return d
}
