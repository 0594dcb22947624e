package algo

import (
	"fmt"

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
	// agg_loss).
	Agg string
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

// Validate checks the ranges and names.
func (c LossConfig) Validate() error {
	switch {
	case c.ClipLow <= 0 || c.ClipLow >= 1:
		return fmt.Errorf("clip_low must be in (0, 1), got %g", c.ClipLow)
	case c.ClipHigh <= 0:
		return fmt.Errorf("clip_high must be positive, got %g", c.ClipHigh)
	case c.DualClip != 0 && c.DualClip <= 1:
		return fmt.Errorf("dual_clip must be 0 (off) or > 1, got %g", c.DualClip)
	}
	switch c.Agg {
	case "token-mean", "seq-mean-token-sum", "seq-mean-token-mean":
	default:
		return fmt.Errorf("loss_agg %q: want token-mean, seq-mean-token-sum or seq-mean-token-mean", c.Agg)
	}
	if _, err := KLEstimator(c.KLEstimator); err != nil {
		return err
	}
	return nil
}

// Norm carries the sizes of a whole mini-batch, so that micro-batch losses
// summed over gradient accumulation equal the mini-batch loss.
type Norm struct {
	Tokens    float64 // loss-mask tokens in the mini-batch
	Sequences float64 // sequences in the mini-batch
}

// Aggregate reduces per-token losses x [B,T] with mask [B,T] (f32 0/1) into
// this micro-batch's share of the mini-batch loss.
func Aggregate(s *torch.Scope, x, mask *torch.Tensor, agg string, n Norm) *torch.Tensor {
	switch agg {
	case "seq-mean-token-sum":
		return s.DivScalar(s.Sum(s.MaskedSum(x, mask, 1)), n.Sequences)
	case "seq-mean-token-mean":
		perSeq := s.Div(s.MaskedSum(x, mask, 1), s.ClampMin(s.Sum(mask, 1), 1))
		return s.DivScalar(s.Sum(perSeq), n.Sequences)
	default: // token-mean
		return s.DivScalar(s.MaskedSum(x, mask), n.Tokens)
	}
}

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
	ratio := s.Exp(s.Sub(logp, oldLogp))
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
		d := s.Sub(refLogp, logp)
		kl = s.SubScalar(s.Sub(s.Exp(d), d), 1)
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
