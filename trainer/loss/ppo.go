package loss

import (
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
)

// PPO is PPO's clipped surrogate (Schulman et al. 2017, arXiv:1707.06347,
// Eq. 7), registered as "ppo", with separate low/high clip (DAPO's
// clip-higher) and optional dual clip, as a loss to minimise:
//
//	r_t = exp(logp_t - oldLogp_t)
//	L_t = max(-A_t r_t, -A_t clip(r_t, 1-eps_low, 1+eps_high))
//	L_t = min(L_t, -A_t c)          where A_t < 0 and dual clip c > 1
//
// A token is clipped low when A_t < 0 and r_t < 1-eps_low, high when
// A_t > 0 and r_t > 1+eps_high: there the clipped term is the max and the
// token's gradient is 0. verl: core_algos.compute_policy_loss_vanilla.
func PPO(s *torch.Scope, in PolicyInputs, cfg algo.LossConfig) PolicyTerms {
	ratio := s.Exp(logRatio(s, in))
	negAdv := s.Neg(in.Adv)
	pg1 := s.Mul(negAdv, ratio)
	pg2 := s.Mul(negAdv, s.Clamp(ratio, 1-cfg.ClipLow, 1+cfg.ClipHigh))
	pg := s.Maximum(pg1, pg2)
	if cfg.DualClip > 1 {
		pg3 := s.MulScalar(negAdv, cfg.DualClip)
		pg = s.Where(s.LtScalar(in.Adv, 0), s.Minimum(pg, pg3), pg)
	}
	r := s.Detach(ratio)
	return PolicyTerms{
		Loss:     pg,
		ClipLow:  s.Mul(bit(s, s.LtScalar(in.Adv, 0)), bit(s, s.LtScalar(r, 1-cfg.ClipLow))),
		ClipHigh: s.Mul(bit(s, s.GtScalar(in.Adv, 0)), bit(s, s.GtScalar(r, 1+cfg.ClipHigh))),
	}
}

func init() { RegisterPolicyLoss("ppo", PPO) }
