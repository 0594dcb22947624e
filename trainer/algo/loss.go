package algo

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/torch"
)

// LossConfig configures the policy, KL, entropy and value losses.
type LossConfig struct {
	// ClipLow and ClipHigh bound the ratio to [1-ClipLow, 1+ClipHigh].
	// ClipHigh > ClipLow is DAPO's clip-higher (Yu et al. 2025,
	// arXiv:2503.14476, Sec. 3.1), which leaves low-probability tokens room
	// to grow and so delays entropy collapse.
	ClipLow, ClipHigh float64
	// DualClip > 1 bounds the loss of negative-advantage tokens by
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
	if c.ClipLow <= 0 || c.ClipLow >= 1 {
		bad("clip_low", "%v, want in (0, 1)", c.ClipLow)
	}
	if c.ClipHigh <= 0 {
		bad("clip_high", "%v, want > 0", c.ClipHigh)
	}
	if c.DualClip != 0 && c.DualClip <= 1 {
		bad("dual_clip", "%v, want 0 (off) or > 1", c.DualClip)
	}
	if !slices.Contains(LossAggs, c.Agg) {
		bad("loss_agg", "%q, want one of %s", c.Agg, strings.Join(LossAggs, ", "))
	}
	if c.Agg == "seq-mean-token-sum-norm" && c.Horizon <= 0 {
		bad("loss_agg", "seq-mean-token-sum-norm needs a positive horizon, got %d", c.Horizon)
	}
	if _, err := KLEstimator(c.KLEstimator); err != nil {
		bad("kl_estimator", "%v", err)
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

// Aggregate reduces per-token losses x [B,T] with mask [B,T] (f32 0/1) into
// this micro-batch's share of the mini-batch loss (verl's agg_loss):
//
//	token-mean               sum of x over the mini-batch's loss tokens / their number
//	seq-mean-token-sum       mean over sequences of each sequence's token sum
//	seq-mean-token-mean      mean over sequences of each sequence's token mean
//	seq-mean-token-sum-norm  seq-mean-token-sum / Horizon, a constant: Dr. GRPO
//	                         (Liu et al. 2025, arXiv:2503.20783, Sec. 3.1) drops the
//	                         1/|o_i| length normalisation that biases GRPO towards
//	                         long wrong answers. verl divides by the padded width and
//	                         averages over micro-batches; here the horizon is
//	                         env.max_tokens, the same for every batch.
func Aggregate(s *torch.Scope, x, mask *torch.Tensor, agg string, n Norm) *torch.Tensor {
	switch agg {
	case "seq-mean-token-sum":
		return s.DivScalar(s.Sum(s.MaskedSum(x, mask, 1)), n.Sequences)
	case "seq-mean-token-sum-norm":
		return s.DivScalar(s.Sum(s.MaskedSum(x, mask, 1)), n.Sequences*n.Horizon)
	case "seq-mean-token-mean":
		perSeq := s.Div(s.MaskedSum(x, mask, 1), s.ClampMin(s.Sum(mask, 1), 1))
		return s.DivScalar(s.Sum(perSeq), n.Sequences)
	default: // token-mean
		return s.DivScalar(s.MaskedSum(x, mask), n.Tokens)
	}
}

// Bounds of the log-ratios, as verl's core_algos has them: the PPO
// log-ratio logp - oldLogp is clamped to [-20, 20] before exp
// (compute_policy_loss), the KL's ref - logp to [-20, 20] and k3 itself to
// [-10, 10] (kl_penalty "low_var_kl"). Without them one token whose
// probability collapsed makes exp overflow to inf, and inf times a 0 weight
// is NaN in the gradient.
const (
	maxLogRatio = 20
	maxK3       = 10
)

// PolicyLoss is PPO's clipped surrogate (Schulman et al. 2017,
// arXiv:1707.06347, Eq. 7) with separate low/high clip and optional dual
// clip, as a loss to minimise:
//
//	r_t     = exp(logp_t - oldLogp_t)
//	L_t     = max(-A_t r_t, -A_t clip(r_t, 1-eps_low, 1+eps_high))
//	L_t     = min(L_t, -A_t c)          where A_t < 0 and dual clip c > 1
//
// All tensors are [B,T]; mask selects the tokens that count.
func PolicyLoss(s *torch.Scope, logp, oldLogp, adv, mask *torch.Tensor, cfg LossConfig, n Norm) *torch.Tensor {
	ratio := s.Exp(s.Clamp(s.Sub(logp, oldLogp), -maxLogRatio, maxLogRatio))
	negAdv := s.Neg(adv)
	pg1 := s.Mul(negAdv, ratio)
	pg2 := s.Mul(negAdv, s.Clamp(ratio, 1-cfg.ClipLow, 1+cfg.ClipHigh))
	pg := s.Maximum(pg1, pg2)
	if cfg.DualClip > 1 {
		pg3 := s.MulScalar(negAdv, cfg.DualClip)
		pg = s.Where(s.LtScalar(adv, 0), s.Minimum(pg, pg3), pg)
	}
	return Aggregate(s, pg, mask, cfg.Agg, n)
}

// KLLoss is the KL-to-reference penalty as a loss term (GRPO's way,
// Shao et al. 2024, arXiv:2402.03300, Eq. 3-4), with the chosen estimator
// applied per token: k1 = logp - ref, k2 = (logp - ref)^2 / 2,
// k3 = exp(ref - logp) - (ref - logp) - 1.
func KLLoss(s *torch.Scope, logp, refLogp, mask *torch.Tensor, estimator, agg string, n Norm) *torch.Tensor {
	var kl *torch.Tensor
	switch estimator {
	case "k1":
		kl = s.Sub(logp, refLogp)
	case "k2":
		kl = s.MulScalar(s.PowScalar(s.Sub(logp, refLogp), 2), 0.5)
	default: // k3
		d := s.Clamp(s.Sub(refLogp, logp), -maxLogRatio, maxLogRatio)
		kl = s.Clamp(s.SubScalar(s.Sub(s.Exp(d), d), 1), -maxK3, maxK3)
	}
	return Aggregate(s, kl, mask, agg, n)
}

// ValueLoss is PPO2's clipped value loss (as in OpenAI baselines' ppo2 and
// CleanRL's ppo.py, "clip_vloss"):
//
//	v_clip = oldV + clip(v - oldV, -c, c)
//	L_t    = 0.5 * max((v - R)^2, (v_clip - R)^2)
func ValueLoss(s *torch.Scope, values, oldValues, returns, mask *torch.Tensor, clip float64, agg string, n Norm) *torch.Tensor {
	unclipped := s.PowScalar(s.Sub(values, returns), 2)
	l := unclipped
	if clip > 0 {
		vclip := s.Add(oldValues, s.Clamp(s.Sub(values, oldValues), -clip, clip))
		l = s.Maximum(unclipped, s.PowScalar(s.Sub(vclip, returns), 2))
	}
	return Aggregate(s, s.MulScalar(l, 0.5), mask, agg, n)
}
