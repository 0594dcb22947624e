package algo

import "github.com/agentrl/agentrl/trajectory"

// GAE is PPO's generalised advantage estimator with a critic (t.Values),
// registered as "gae". Over a multi-turn trajectory the recursion runs over
// the credited tokens s_1..s_n of steps (the action tokens with the
// advantage mask on): each step bootstraps from the value of the NEXT step,
// so the last action token of turn 1 bootstraps from the first action token
// of turn 2, skipping the tool response between them, and V = 0 after the
// last step. Returns are advantages + values (the critic's targets), taken
// before the optional whitening. A token after the prompt that is not a
// step (a tool-response token, with the advantage mask on) takes the
// advantage of the next step and the return A + V of its own value, as
// verl's multi-turn GAE carries lastgaelam across mask-0 tokens: the loss
// mask then decides whether those tokens count. Prompt tokens get 0.
// Whitening takes its statistics over the steps and applies them to every
// token that has an advantage.
func GAE(batch []*trajectory.Trajectory, kl [][]float32, opt Options) error {
	if err := checkBatch(batch, kl, true); err != nil {
		return err
	}
	idx := make([][]int, len(batch))
	for k, t := range batch {
		resetOutputs(t)
		r := tokenRewards(t, klOf(kl, k), opt.KLCoef)
		idx[k] = steps(t, opt)
		nextValue, lastGAE := 0.0, 0.0 // V(s_{n+1}) = 0, A_{n+1} = 0
		for j := len(idx[k]) - 1; j >= 0; j-- {
			i := idx[k][j]
			v := float64(t.Values[i])
			// TD error, Schulman et al. 2016 (arXiv:1506.02438) Sec. 3:
			// delta_t = r_t + gamma*V(s_{t+1}) - V(s_t)
			delta := r[i] + opt.Gamma*nextValue - v
			// GAE eq. (16) as a backward recursion:
			// A_t = delta_t + gamma*lambda*A_{t+1}
			lastGAE = delta + opt.Gamma*opt.Lambda*lastGAE
			t.Advantages[i] = float32(lastGAE)
			// value target: R_t = A_t + V(s_t)
			t.Returns[i] = float32(lastGAE + v)
			nextValue = v
		}
		for _, i := range carryAcross(t, idx[k]) {
			t.Returns[i] = t.Advantages[i] + t.Values[i]
		}
	}
	if opt.Whiten {
		return whiten(batch, idx)
	}
	return nil
}

func init() { Register("gae", Estimator{Advantages: GAE, Critic: true}) }
