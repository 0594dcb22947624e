package loss

import (
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
)

// GSPO is Group Sequence Policy Optimization (Zheng et al. 2025,
// arXiv:2507.18071), registered as "gspo": the importance ratio of a
// sequence is the geometric mean of its tokens' ratios over the tokens
// the loss counts (the mask),
//
//	s_i = exp( 1/|y_i| * sum_t (logp_t - oldLogp_t) )
//
// clipped at the sequence level like PPO's. The form here is the paper's
// GSPO-token, which allows per-token advantages (GiGPO's
// step-level ones, turn-level ones):
//
//	s_{i,t} = sg[s_i] * exp(logp_t - sg[logp_t])   (value s_i, d s_{i,t}/d logp_t = s_i)
//	L_t     = max(-A_t s_{i,t}, -A_t clip(s_{i,t}, 1-eps_low, 1+eps_high))
//
// With one advantage per sequence and loss_agg seq-mean-token-mean it is
// GSPO itself, value and gradient: d/d logp_t of -A s_i is -A s_i/|y_i|.
// The paper clips at 3e-4 and 4e-4 and averages per sequence
// (seq-mean-token-mean). A token is clipped low or high as for ppo, with
// the sequence ratio. verl: core_algos.compute_policy_loss_gspo.
func GSPO(s *torch.Scope, in PolicyInputs, cfg algo.LossConfig) PolicyTerms {
	lr := s.Sub(in.LogP, in.OldLogP)
	// 1/|y_i| sum_t over the mask, [B,1]
	seq := s.Div(s.Reshape(s.MaskedSum(lr, in.Mask, 1), -1, 1), s.ClampMin(s.SumKeep(in.Mask, 1), 1))
	logS := s.Add(s.Detach(seq), s.Sub(in.LogP, s.Detach(in.LogP)))
	ratio := s.Exp(s.Clamp(logS, -algo.MaxLogRatio, algo.MaxLogRatio))
	negAdv := s.Neg(in.Adv)
	pg := s.Maximum(s.Mul(negAdv, ratio), s.Mul(negAdv, s.Clamp(ratio, 1-cfg.ClipLow, 1+cfg.ClipHigh)))
	r := s.Detach(ratio)
	return PolicyTerms{
		Loss:     pg,
		ClipLow:  s.Mul(bit(s, s.LtScalar(in.Adv, 0)), bit(s, s.LtScalar(r, 1-cfg.ClipLow))),
		ClipHigh: s.Mul(bit(s, s.GtScalar(in.Adv, 0)), bit(s, s.GtScalar(r, 1+cfg.ClipHigh))),
	}
}

func init() { RegisterPolicyLoss("gspo", GSPO) }
