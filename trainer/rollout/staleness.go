package rollout

import (
	"fmt"

	"github.com/agentrl/agentrl/trajectory"
)

// MayStart reports whether the batch of iteration j of asynchronous
// training may be sampled once the updates up to iteration updated are
// published, under the bound k (rollout.max_staleness): the update of j,
// which starts from the weights of j-1, is then at most k versions ahead
// of any turn it learns from.
func MayStart(j, updated, k int) bool { return j-k-1 <= updated }

// versionLag is the number of versions in published (ascending) after v up
// to now: how many updates the policy at now has seen that the one at v
// had not.
func versionLag(v int, published []int, now int) int {
	n := 0
	for _, p := range published {
		if p > v && p <= now {
			n++
		}
	}
	return n
}

// Staleness checks that no turn of trs was sampled more than k versions
// before now, and returns the mean and largest version lag of their turns.
func Staleness(trs []*trajectory.Trajectory, published []int, now, k int) (mean, largest float64, err error) {
	n := 0
	for _, tr := range trs {
		for i, tu := range tr.Turns {
			lag := versionLag(tu.PolicyVersion, published, now)
			if lag > k {
				return 0, 0, fmt.Errorf("turn %d of %s was sampled by policy version %d, %d versions before the update's %d: above rollout.max_staleness %d",
					i, tr.ID, tu.PolicyVersion, lag, now, k)
			}
			mean += float64(lag)
			largest = max(largest, float64(lag))
			n++
		}
	}
	if n > 0 {
		mean /= float64(n)
	}
	return mean, largest, nil
}
