package algo

import (
	"math"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// filterBatch holds five groups, interleaved, with Bessel-corrected
// reward stds:
//
//	Group 7: 1, 1, 1       std 0              (appears first)
//	Group 1: 1, 0, 1       mean 2/3, squares 1/9+4/9+1/9 = 2/3, std sqrt(1/3) = 0.577
//	Group 2: 0.5, 0.5      std 0              (appears after group 7)
//	Group 3: 0, 1          mean 0.5, squares 0.5, std sqrt(0.5) = 0.707
//	Group 4: 0.2, 0.4, 0.6 mean 0.4, squares 0.08, std sqrt(0.04) = 0.2
//
// Ranked: 3, 1, 4, then the tie 7 before 2 (first appearance; sorting by
// Group number would put 2 first).
func filterBatch() []*trajectory.Trajectory {
	r := map[int][]float64{7: {1, 1, 1}, 1: {1, 0, 1}, 2: {0.5, 0.5}, 3: {0, 1}, 4: {0.2, 0.4, 0.6}}
	var batch []*trajectory.Trajectory
	for s := range 3 {
		for _, g := range []int{7, 1, 2, 3, 4} {
			if s < len(r[g]) {
				tr := oneTurn("", g, 1, r[g][s])
				tr.Sample = s
				batch = append(batch, tr)
			}
		}
	}
	return batch
}

func groupsKept(kept []*trajectory.Trajectory) []int {
	var g []int
	for _, t := range kept {
		if !slices.Contains(g, t.Group) {
			g = append(g, t.Group)
		}
	}
	slices.Sort(g)
	return g
}

func TestFilterGroupsByVariance(t *testing.T) {
	cases := []struct {
		ratio   float64
		groups  []int
		dropped int
	}{
		{1, []int{1, 2, 3, 4, 7}, 0},
		{0.6, []int{1, 3, 4}, 2},    // floor(0.6*5) = 3
		{0.8, []int{1, 3, 4, 7}, 1}, // 4: the tie at 0 keeps group 7
		{0.1, []int{3}, 4},          // floor(0.5) = 0, at least one
	}
	for _, c := range cases {
		batch := filterBatch()
		kept, dropped := FilterGroupsByVariance(batch, c.ratio)
		if g := groupsKept(kept); !slices.Equal(g, c.groups) || dropped != c.dropped {
			t.Errorf("ratio %v: kept groups %v dropped %d, want %v dropped %d", c.ratio, g, dropped, c.groups, c.dropped)
		}
		// kept trajectories stay in batch order
		var want []*trajectory.Trajectory
		for _, tr := range batch {
			if slices.Contains(c.groups, tr.Group) {
				want = append(want, tr)
			}
		}
		if !slices.Equal(kept, want) {
			t.Errorf("ratio %v: kept trajectories out of batch order", c.ratio)
		}
	}
}

// GroupRewardStd over filterBatch: (0 + sqrt(1/3) + 0 + sqrt(0.5) + 0.2)/5.
func TestGroupRewardStd(t *testing.T) {
	want := (0 + 0.5773502691896258 + 0 + 0.7071067811865476 + 0.2) / 5
	if got := GroupRewardStd(filterBatch()); !near(got, want) {
		t.Errorf("GroupRewardStd = %v, want %v", got, want)
	}
	if got := GroupRewardStd([]*trajectory.Trajectory{oneTurn("a", 0, 1, 1)}); !math.IsNaN(got) {
		t.Errorf("GroupRewardStd of singletons = %v, want NaN", got)
	}
}
