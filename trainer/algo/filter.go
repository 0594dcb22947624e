package algo

import (
	"math"
	"sort"

	"github.com/agentrl/agentrl/trajectory"
)

// FilterGroupsByVariance is StarPO-S's uncertainty filter (RAGEN,
// arXiv:2504.20073; ragen/trainer/rollout_filter.py, strategy
// top_k): groups whose samples all earn about the same reward teach
// little, so only the groups with the largest within-group reward std are
// kept. The reward is the scalar Outcome + process rewards; the std is
// Bessel-corrected (torch.std), 0 for a group of one; an episode's
// segments count once.
//
// It keeps k = floor(keepRatio * groups) groups, at least one (RAGEN's
// int(ratio*n) and max(k, 1)); keepRatio >= 1 keeps every group. Groups are
// ranked by std, largest first, ties broken by first appearance in the
// batch, so the result is deterministic. kept holds the trajectories of the
// kept groups in batch order; dropped counts the dropped groups.
func FilterGroupsByVariance(trajs []*trajectory.Trajectory, keepRatio float64) (kept []*trajectory.Trajectory, dropped int) {
	groups := groupsOf(trajs)
	k := len(groups)
	if keepRatio < 1 {
		// the small epsilon keeps 0.29*100 = 28.999999999999996 at 29
		k = max(1, int(math.Floor(keepRatio*float64(len(groups))+1e-9)))
	}
	if k >= len(groups) {
		return trajs, 0
	}
	s := episodeScores(trajs, nil, 0)
	std := make([]float64, len(groups))
	for g, members := range groups {
		reps, _ := episodes(trajs, members)
		_, std[g] = meanStd(s, reps)
	}
	order := make([]int, len(groups))
	for g := range order {
		order[g] = g
	}
	sort.SliceStable(order, func(a, b int) bool { return std[order[a]] > std[order[b]] })
	keep := make([]bool, len(trajs))
	for _, g := range order[:k] {
		for _, i := range groups[g] {
			keep[i] = true
		}
	}
	for i, t := range trajs {
		if keep[i] {
			kept = append(kept, t)
		}
	}
	return kept, len(groups) - k
}
