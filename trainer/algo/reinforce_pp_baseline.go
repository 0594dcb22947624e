package algo

import "github.com/agentrl/agentrl/trajectory"

// ReinforcePPBaseline is REINFORCE++-baseline (Hu 2025, arXiv:2501.03262),
// registered as "reinforce_pp_baseline": the group mean of the scalar score
// (as for GRPO) is subtracted, the result broadcast to every credited token
// and then whitened over every credited token of the batch:
//
//	A_i = r_i - mean_group(r);   A_t <- (A_t - mean_batch) / sqrt(var_batch + 1e-8)
//
// A group of one sample is its own mean: A = 0 before whitening (verl uses
// mean 0 there). Returns hold A_i before whitening. verl:
// compute_reinforce_plus_plus_baseline_outcome_advantage. The segments of
// an episode (see episodes) count once in the group mean and each gets
// the episode's advantage.
func ReinforcePPBaseline(batch []*trajectory.Trajectory, kl [][]float32, opt Options) error {
	if err := checkBatch(batch, kl, false); err != nil {
		return err
	}
	s := episodeScores(batch, kl, opt.KLCoef)
	idx := make([][]int, len(batch))
	for _, g := range groupsOf(batch) {
		reps, _ := episodes(batch, g)
		mean, _ := meanStd(s, reps)
		for _, k := range g {
			resetOutputs(batch[k])
			idx[k] = broadcast(batch[k], opt, s[k]-mean)
		}
	}
	return whiten(batch, idx)
}

func init() {
	Register("reinforce_pp_baseline", Estimator{Advantages: ReinforcePPBaseline, Groups: true})
}
