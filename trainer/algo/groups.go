package algo

import (
	"math"

	"github.com/agentrl/agentrl/internal/stat"
	"github.com/agentrl/agentrl/trajectory"
)

// groupKey identifies a group of samples of one prompt: the prompt's index
// within its iteration's batch (t.Group), qualified by the iteration so a
// batch mixing iterations cannot merge two prompts.
type groupKey struct{ iteration, group int }

// groupsOf partitions the batch positions by group, groups in order of
// first appearance and members in batch order.
func groupsOf(batch []*trajectory.Trajectory) [][]int {
	pos := map[groupKey]int{}
	var groups [][]int
	for k, t := range batch {
		key := groupKey{t.Iteration, t.Group}
		g, ok := pos[key]
		if !ok {
			g = len(groups)
			pos[key] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], k)
	}
	return groups
}

// scores returns the scalar reward of every trajectory (see score).
func scores(batch []*trajectory.Trajectory, kl [][]float32, beta float64) []float64 {
	s := make([]float64, len(batch))
	for k, t := range batch {
		s[k] = score(t, klOf(kl, k), beta)
	}
	return s
}

// meanStd returns the mean of s over the positions g and their
// Bessel-corrected (n-1) standard deviation, torch.std's default as used by
// verl and RAGEN; the std is 0 for fewer than two positions.
func meanStd(s []float64, g []int) (mean, std float64) {
	if len(g) == 0 {
		return 0, 0
	}
	vals := make([]float64, len(g))
	for i, k := range g {
		vals[i] = s[k]
	}
	return stat.MeanStd(vals, 1)
}

// broadcast gives every credited token of t the sequence advantage a, and
// the same value as its return (verl returns the advantages as returns for
// the critic-free estimators).
func broadcast(t *trajectory.Trajectory, opt Options, a float64) []int {
	idx := steps(t, opt)
	for _, i := range idx {
		t.Advantages[i] = float32(a)
		t.Returns[i] = float32(a)
	}
	return idx
}

// GroupRewardStd is the mean, over the groups with at least two samples,
// of the within-group std of the scalar reward (Outcome + process
// rewards; an episode's segments count once): the signal whose collapse
// RAGEN calls the echo trap. It is NaN when no group has two samples.
func GroupRewardStd(batch []*trajectory.Trajectory) float64 {
	s := episodeScores(batch, nil, 0)
	sum, n := 0.0, 0
	for _, g := range groupsOf(batch) {
		g, _ = episodes(batch, g)
		if len(g) < 2 {
			continue
		}
		_, std := meanStd(s, g)
		sum += std
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}
