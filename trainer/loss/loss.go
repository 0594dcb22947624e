// Package loss holds the RL losses as differentiable tensor expressions
// over the logprobs and values the model returns: the policy losses,
// registered by name as the estimators are (PPO's clipped surrogate, GSPO,
// CISPO), the KL-to-reference term, PPO2's clipped value loss, and the
// token aggregations (verl's agg_loss) they share. They are composed from the
// small set of torch.Scope ops so that each reads like its paper; their
// settings (algo.LossConfig) and normalisers (algo.Norm) are pure Go in
// trainer/algo.
package loss

import (
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
)

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
func Aggregate(s *torch.Scope, x, mask *torch.Tensor, agg string, n algo.Norm) *torch.Tensor {
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

// TokenKL is the per-token estimate of KL(pi || pi_ref) from each sampled
// token's log-probability under the policy (logp) and under the reference
// (refLogp), by one of Schulman's single-sample approximations (J.
// Schulman, "Approximating KL Divergence", 2020; verl's kl_penalty), with
// log r = ref - logp:
//
//	k1 = -log r = logp - ref               unbiased, high variance, can be negative
//	k2 = (log r)^2 / 2                     biased, low variance, >= 0
//	k3 = (r - 1) - log r                   unbiased, low variance, >= 0
//
// k3's log-ratio is clamped to [-20, 20] and k3 to at most 10, as verl's
// low_var_kl has them. It is both the KL loss's term and the penalty that
// KL-in-reward subtracts.
func TokenKL(s *torch.Scope, logp, refLogp *torch.Tensor, estimator string) *torch.Tensor {
	switch estimator {
	case "k1":
		return s.Sub(logp, refLogp)
	case "k2":
		return s.MulScalar(s.PowScalar(s.Sub(logp, refLogp), 2), 0.5)
	default: // k3
		d := s.Clamp(s.Sub(refLogp, logp), -algo.MaxLogRatio, algo.MaxLogRatio)
		return s.ClampMax(s.SubScalar(s.Sub(s.Exp(d), d), 1), algo.MaxK3)
	}
}

// KLLoss is the KL-to-reference penalty as a loss term (GRPO's way,
// Shao et al. 2024, arXiv:2402.03300, Eq. 3-4): TokenKL aggregated over
// the mask.
func KLLoss(s *torch.Scope, logp, refLogp, mask *torch.Tensor, estimator, agg string, n algo.Norm) *torch.Tensor {
	return Aggregate(s, TokenKL(s, logp, refLogp, estimator), mask, agg, n)
}

// ValueLoss is PPO2's clipped value loss (as in OpenAI baselines' ppo2 and
// CleanRL's ppo.py, "clip_vloss"):
//
//	v_clip = oldV + clip(v - oldV, -c, c)
//	L_t    = 0.5 * max((v - R)^2, (v_clip - R)^2)
func ValueLoss(s *torch.Scope, values, oldValues, returns, mask *torch.Tensor, clip float64, agg string, n algo.Norm) *torch.Tensor {
	unclipped := s.PowScalar(s.Sub(values, returns), 2)
	l := unclipped
	if clip > 0 {
		vclip := s.Add(oldValues, s.Clamp(s.Sub(values, oldValues), -clip, clip))
		l = s.Maximum(unclipped, s.PowScalar(s.Sub(vclip, returns), 2))
	}
	return Aggregate(s, s.MulScalar(l, 0.5), mask, agg, n)
}
