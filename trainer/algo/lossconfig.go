package algo

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// LossConfig configures the policy, KL, entropy and value losses. The
// struct tags hold each setting's one default and description: the
// trainer's configuration inlines LossConfig in its algorithm section
// (algorithm.policy_loss, algorithm.clip_low, ...), and the learner reads
// it from there as the losses here do.
type LossConfig struct {
	// PolicyLoss names the policy loss (one of PolicyLosses): "ppo",
	// "gspo" or "cispo" (trainer/loss registers each under its name).
	PolicyLoss string `yaml:"policy_loss" default:"ppo" enum:"ppo|gspo|cispo" doc:"policy loss: PPO's clipped token ratio, GSPO's clipped sequence ratio (arXiv:2507.18071; its paper clips at 3e-4/4e-4 with seq-mean-token-mean), or CISPO's clipped, stop-gradient importance weight on log-probabilities (arXiv:2506.13585)"`
	// ClipLow and ClipHigh bound the ratio to [1-ClipLow, 1+ClipHigh]:
	// the token ratio of ppo, the sequence ratio of gspo (whose paper uses
	// 3e-4 and 4e-4), the importance-sampling weight of cispo.
	// ClipHigh > ClipLow is DAPO's clip-higher (Yu et al. 2025,
	// arXiv:2503.14476, Sec. 3.1), which leaves low-probability tokens room
	// to grow and so delays entropy collapse.
	ClipLow  float64 `yaml:"clip_low" default:"0.2" doc:"ratio clip below: 1 - clip_low (the token ratio of ppo, the sequence ratio of gspo, the IS weight of cispo)"`
	ClipHigh float64 `yaml:"clip_high" default:"0.28" doc:"ratio clip above: 1 + clip_high (DAPO clip-higher)"`
	// DualClip > 1 bounds the ppo loss of negative-advantage tokens by
	// -A * DualClip (Ye et al. 2020, "Mastering Complex Control in MOBA
	// Games", arXiv:1912.09729, Eq. 5; verl: clip_ratio_c); 0 is off.
	DualClip float64 `yaml:"dual_clip" default:"0" doc:"dual-clip bound c > 1 for negative advantages, ppo only (0 = off)"`
	// Agg is how token losses become one number: "token-mean" (every
	// token of the mini-batch weighs the same), "seq-mean-token-sum" or
	// "seq-mean-token-mean" (every sequence weighs the same; verl's
	// agg_loss), or "seq-mean-token-sum-norm" (Dr. GRPO: token sums over a
	// constant horizon, Norm.Horizon; the trainer's is env.max_tokens).
	LossAgg string `yaml:"loss_agg" default:"token-mean" enum:"token-mean|seq-mean-token-sum|seq-mean-token-mean|seq-mean-token-sum-norm" doc:"how token losses are averaged (seq-mean-token-sum-norm: Dr. GRPO, token sums over the constant env.max_tokens)"`
	// KLEstimator estimates the per-token KL to the reference (k1, k2, k3),
	// in the loss term or the reward penalty, whose weight is
	// Options.KLCoef (algorithm.kl_coef).
	KLEstimator string `yaml:"kl_estimator" default:"k3" doc:"single-sample KL estimator: k1, k2 or k3"`
	// KLMode puts the KL to the reference in the loss ("loss"), in the
	// rewards ("reward", the estimators' KL penalty) or nowhere ("off").
	KLMode string `yaml:"kl_mode" default:"loss" enum:"loss|reward|off" doc:"KL as a loss term, as a reward penalty, or not at all"`
	// EntropyCoef is the entropy bonus: loss -= EntropyCoef * entropy.
	EntropyCoef float64 `yaml:"entropy_coef" default:"0" doc:"weight of the entropy bonus"`
	// VFCoef weighs the critic's loss; ValueClip bounds how far a value may
	// move from the one the rollout saw (PPO2's clipped value loss).
	VFCoef    float64 `yaml:"vf_coef" default:"0.5" doc:"weight of the value loss"`
	ValueClip float64 `yaml:"value_clip" default:"0.2" doc:"clip range of value updates (0 = off)"`
}

// PolicyLosses are the names PolicyLoss accepts, as trainer/loss
// registers them: PPO's clipped surrogate, GSPO's sequence-level ratio and
// CISPO's clipped importance-sampling weight.
var PolicyLosses = []string{"ppo", "gspo", "cispo"}

// LossAggs are the names LossAgg accepts.
var LossAggs = []string{"token-mean", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"}

// FieldError is a LossConfig problem; Field is the field's YAML name
// (clip_low, loss_agg, ...), so a configuration can name its key.
type FieldError struct{ Field, Msg string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate checks the ranges and names, reporting every problem as a
// *FieldError (joined); horizon is the constant divisor
// seq-mean-token-sum-norm would use.
func (c LossConfig) Validate(horizon int) error {
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
	if !slices.Contains(LossAggs, c.LossAgg) {
		bad("loss_agg", "%q, want one of %s", c.LossAgg, strings.Join(LossAggs, ", "))
	}
	if c.LossAgg == "seq-mean-token-sum-norm" && horizon <= 0 {
		bad("loss_agg", "seq-mean-token-sum-norm needs a positive horizon, got %d", horizon)
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
