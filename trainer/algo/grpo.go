package algo

import (
	"fmt"

	"github.com/agentrl/agentrl/trajectory"
)

// GRPO is the group-relative outcome estimator, registered as "grpo".
// The score of a trajectory is its summed token-level reward (verl:
// token_level_rewards.sum(-1)): Outcome + the process rewards - the KL
// penalty. Within a group (same prompt, t.Group) of G samples:
//
//	A_i = (r_i - mean(r)) / (std(r) + eps)   (Shao et al. 2024, arXiv:2402.03300, Sec. 4.1.2)
//	A_i =  r_i - mean(r)                     (NormByStd false: Dr. GRPO, arXiv:2503.20783)
//
// with the Bessel-corrected std, broadcast to every credited token (see
// Options.AdvantageMask). A group of one sample has no baseline and gets
// A = 0; verl instead uses mean 0 and std 1 there, which hands the raw
// score on as the advantage. Returns equal the advantages, as in verl's
// compute_grpo_outcome_advantage. The segments of an episode (see
// episodes) count once in the group and each gets the episode's advantage.
func GRPO(batch []*trajectory.Trajectory, kl [][]float32, opt Options) error {
	if err := checkBatch(batch, kl, false); err != nil {
		return err
	}
	s := episodeScores(batch, kl, opt.KLCoef)
	for _, g := range groupsOf(batch) {
		reps, rep := episodes(batch, g)
		adv, err := relative(s, reps, opt)
		if err != nil {
			return fmt.Errorf("group %d (trajectory %q): %w", batch[g[0]].Group, batch[g[0]].ID, err)
		}
		for _, k := range g {
			resetOutputs(batch[k])
			broadcast(batch[k], opt, adv[rep[k]])
		}
	}
	return nil
}

func init() { Register("grpo", Estimator{Advantages: GRPO, Groups: true}) }
