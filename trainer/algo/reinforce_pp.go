package algo

import "github.com/agentrl/agentrl/trajectory"

// ReinforcePP is REINFORCE++ (Hu 2025, arXiv:2501.03262), registered as
// "reinforce_pp": no critic, no group baseline. The return is discounted
// over the credited tokens s_1..s_n (the action tokens with the advantage
// mask on, so the sum skips tool responses just as GAE does):
//
//	G_{s_j} = r_{s_j} + gamma * G_{s_{j+1}},   G_{s_{n+1}} = 0
//
// with token-level rewards (process rewards at the end of their turn, the
// outcome at the last action token, minus the KL penalty), then whitened
// over every credited token of the batch (the paper's global advantage
// normalisation). Returns hold G before whitening. Tokens after the prompt
// that are not steps carry the G of the next step (see carryAcross). verl:
// compute_reinforce_plus_plus_outcome_advantage, whose running return
// resets at every mask-0 token instead of stepping over it.
func ReinforcePP(batch []*trajectory.Trajectory, kl [][]float32, opt Options) error {
	if err := checkBatch(batch, kl, false); err != nil {
		return err
	}
	idx := make([][]int, len(batch))
	for k, t := range batch {
		resetOutputs(t)
		r := tokenRewards(t, klOf(kl, k), opt.KLCoef)
		idx[k] = steps(t, opt)
		g := 0.0
		for j := len(idx[k]) - 1; j >= 0; j-- {
			i := idx[k][j]
			g = r[i] + opt.Gamma*g
			t.Returns[i] = float32(g)
			t.Advantages[i] = float32(g)
		}
		for _, i := range carryAcross(t, idx[k]) {
			t.Returns[i] = t.Advantages[i]
		}
	}
	return whiten(batch, idx)
}

func init() { Register("reinforce_pp", Estimator{Advantages: ReinforcePP}) }
