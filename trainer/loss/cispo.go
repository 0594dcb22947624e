package loss

import (
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
)

// CISPO is MiniMax-M1's Clipped IS-weight Policy Optimization (MiniMax
// 2025, arXiv:2506.13585, Eq. 4-5), registered as "cispo": rather than
// clipping the surrogate, which gives a clipped token no gradient at all,
// it clips the importance-sampling weight and stops its gradient, so every
// token keeps a REINFORCE gradient:
//
//	r_t = exp(logp_t - oldLogp_t)
//	L_t = -sg[clip(r_t, 1-eps_low, 1+eps_high)] * A_t * logp_t
//
// d L_t / d logp_t = -clip(r_t) A_t, which at r_t = 1 is PPO's gradient.
// The value of L_t is not an objective (it holds logp_t), only its
// gradient is. A token is clipped low when r_t < 1-eps_low and high when
// r_t > 1+eps_high, whatever the sign of A_t (the weight is clipped
// either way). The paper bounds only the top (a large eps_low); verl:
// core_algos.compute_policy_loss_cispo.
func CISPO(s *torch.Scope, in PolicyInputs, cfg algo.LossConfig) PolicyTerms {
	r := s.Detach(s.Exp(logRatio(s, in)))
	w := s.Clamp(r, 1-cfg.ClipLow, 1+cfg.ClipHigh)
	return PolicyTerms{
		Loss:     s.Neg(s.Mul(s.Mul(w, in.Adv), in.LogP)),
		ClipLow:  bit(s, s.LtScalar(r, 1-cfg.ClipLow)),
		ClipHigh: bit(s, s.GtScalar(r, 1+cfg.ClipHigh)),
	}
}

func init() { RegisterPolicyLoss("cispo", CISPO) }
