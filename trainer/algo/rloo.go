package algo

import "github.com/agentrl/agentrl/trajectory"

// RLOO is REINFORCE with the leave-one-out baseline, registered as "rloo"
// (Ahmadian et al. 2024, arXiv:2402.14740; Kool et al. 2019). Within a
// group of G samples with scores r (as for GRPO):
//
//	A_i = r_i - 1/(G-1) * sum_{j != i} r_j = G/(G-1) * (r_i - mean(r))
//
// the second form being verl's compute_rloo_outcome_advantage. It is
// broadcast to every credited token; a group of one sample has no other
// sample to compare with and gets A = 0 (verl hands on the raw score).
// Returns equal the advantages. The segments of an episode (see episodes)
// count once in the group and each gets the episode's advantage.
func RLOO(batch []*trajectory.Trajectory, kl [][]float32, opt Options) error {
	if err := checkBatch(batch, kl, false); err != nil {
		return err
	}
	s := episodeScores(batch, kl, opt.KLCoef)
	for _, g := range groupsOf(batch) {
		reps, _ := episodes(batch, g)
		mean, _ := meanStd(s, reps)
		n := float64(len(reps))
		for _, k := range g {
			a := 0.0
			if len(reps) > 1 {
				a = n / (n - 1) * (s[k] - mean)
			}
			resetOutputs(batch[k])
			broadcast(batch[k], opt, a)
		}
	}
	return nil
}

func init() { Register("rloo", Estimator{Advantages: RLOO, Groups: true}) }
