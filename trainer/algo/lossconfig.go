package algo

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// LossConfig configures the policy, KL, entropy and value losses.
type LossConfig struct {
	// PolicyLoss names the policy loss (one of PolicyLosses): "ppo",
	// "gspo" or "cispo" (trainer/loss registers each under its name).
	PolicyLoss string
	// ClipLow and ClipHigh bound the ratio to [1-ClipLow, 1+ClipHigh]:
	// the token ratio of ppo, the sequence ratio of gspo (whose paper uses
	// 3e-4 and 4e-4), the importance-sampling weight of cispo.
	// ClipHigh > ClipLow is DAPO's clip-higher (Yu et al. 2025,
	// arXiv:2503.14476, Sec. 3.1), which leaves low-probability tokens room
	// to grow and so delays entropy collapse.
	ClipLow, ClipHigh float64
	// DualClip > 1 bounds the ppo loss of negative-advantage tokens by
	// -A * DualClip (Ye et al. 2020, "Mastering Complex Control in MOBA
	// Games", arXiv:1912.09729, Eq. 5; verl: clip_ratio_c); 0 is off.
	DualClip float64
	// Agg is how token losses become one number: "token-mean" (every
	// token of the mini-batch weighs the same), "seq-mean-token-sum" or
	// "seq-mean-token-mean" (every sequence weighs the same; verl's
	// agg_loss), or "seq-mean-token-sum-norm" (Dr. GRPO: token sums over a
	// constant Horizon, see Aggregate).
	Agg string
	// Horizon is the constant divisor of seq-mean-token-sum-norm, in
	// tokens (the trainer uses env.max_tokens).
	Horizon int
	// KLCoef weighs the KL-to-reference loss term (KLInLoss) estimated with
	// KLEstimator (k1, k2, k3).
	KLCoef      float64
	KLEstimator string
	KLInLoss    bool
	// EntropyCoef is the entropy bonus: loss -= EntropyCoef * entropy.
	EntropyCoef float64
	// VFCoef weighs the critic's loss; ValueClip bounds how far a value may
	// move from the one the rollout saw (PPO2's clipped value loss).
	VFCoef, ValueClip float64
}

// PolicyLosses are the names PolicyLoss accepts, as trainer/loss
// registers them: PPO's clipped surrogate, GSPO's sequence-level ratio and
// CISPO's clipped importance-sampling weight.
var PolicyLosses = []string{"ppo", "gspo", "cispo"}

// LossAggs are the names Agg accepts.
var LossAggs = []string{"token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"}

// FieldError is a LossConfig problem; Field is the field's YAML name
// (clip_low, loss_agg, ...), so a configuration can name its key.
type FieldError struct{ Field, Msg string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate checks the ranges and names, reporting every problem as a
// *FieldError (joined).
func (c LossConfig) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if !slices.Contains(PolicyLosses, c.PolicyLoss) {
		bad("policy_loss", "%q, want one of %s", c.PolicyLoss, strings.Join(PolicyLosses, ", "))
	}
	if c.ClipLow <= 0 || c.ClipLow >= 1 {
		bad("clip_low", "%v, want in (0, 1)", c.ClipLow)
	}
	if c.ClipHigh <= 0 {
		bad("clip_high", "%v, want > 0", c.ClipHigh)
	}
	if c.DualClip != 0 && c.DualClip <= 1 {
		bad("dual_clip", "%v, want 0 (off) or > 1", c.DualClip)
	} else if c.DualClip != 0 && c.PolicyLoss != "ppo" {
		bad("dual_clip", "%v, but dual clip bounds the ppo loss only (policy_loss is %q)", c.DualClip, c.PolicyLoss)
	}
	if !slices.Contains(LossAggs, c.Agg) {
		bad("loss_agg", "%q, want one of %s", c.Agg, strings.Join(LossAggs, ", "))
	}
	if c.Agg == "seq-mean-token-sum-norm" && c.Horizon <= 0 {
		bad("loss_agg", "seq-mean-token-sum-norm needs a positive horizon, got %d", c.Horizon)
	}
	if !slices.Contains(KLEstimators, c.KLEstimator) {
		bad("kl_estimator", "%q, want one of %s", c.KLEstimator, strings.Join(KLEstimators, ", "))
	}
	return errors.Join(errs...)
}

// Norm carries the sizes of a whole mini-batch, so that micro-batch losses
// summed over gradient accumulation equal the mini-batch loss.
type Norm struct {
	Tokens    float64 // loss-mask tokens in the mini-batch
	Sequences float64 // sequences in the mini-batch
	Horizon   float64 // the constant length of seq-mean-token-sum-norm
}

// MaxLogRatio and MaxK3 bound the log-ratios, as verl's core_algos has
// them: the PPO log-ratio logp - oldLogp is clamped to [-20, 20] before exp
// (compute_policy_loss), the KL's ref - logp to [-20, 20] and k3 itself to
// [-10, 10] (kl_penalty "low_var_kl"). Without them one token whose
// probability collapsed makes exp overflow to inf, and inf times a 0 weight
// is NaN in the gradient.
const (
	MaxLogRatio = 20
	MaxK3       = 10
)
