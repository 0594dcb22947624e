package rollout

import (
	"strings"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// The version bound on a hand-made schedule: each iteration's update
// takes 3 optimizer steps, so the published versions are 0, 3, 6, 9, ...
// (version V_i after iteration i). The batch of iteration j may start
// once update j-k-1 is published: at the earliest its first turn is
// sampled by V_{j-k-1}, and the update of j starts from V_{j-1}, k
// versions later, never more. One step before that is refused.
func TestStalenessBoundOnSchedule(t *testing.T) {
	for k := 1; k <= 3; k++ {
		for j := 1; j <= 8; j++ {
			if MayStart(j, j-k-2, k) {
				t.Errorf("k %d: the batch of iteration %d may start with update %d published, want only from %d", k, j, j-k-2, j-k-1)
			}
			if !MayStart(j, j-k-1, k) {
				t.Errorf("k %d: the batch of iteration %d may not start with update %d published", k, j, j-k-1)
			}
			// The published versions up to iteration j-1 (update 0 is the start).
			var pub []int
			for i := 0; i <= j-1; i++ {
				pub = append(pub, 3*i)
			}
			oldest := 3 * max(j-k-1, 0)
			now := 3 * (j - 1)
			want := min(k, j-1)
			if got := versionLag(oldest, pub, now); got != want {
				t.Errorf("k %d iteration %d: a turn sampled by version %d lags %d behind %d, want %d", k, j, oldest, got, now, want)
			}
		}
	}
	// staleness over turns: versions 3 and 6 under the update at 9 lag 2
	// and 1; the mean over the 3 turns (2, 1, 1) is 4/3.
	pub := []int{0, 3, 6, 9}
	trs := []*trajectory.Trajectory{
		{ID: "a", Turns: []trajectory.Turn{{PolicyVersion: 3}, {PolicyVersion: 6}}},
		{ID: "b", Turns: []trajectory.Turn{{PolicyVersion: 6}}},
	}
	mean, largest, err := Staleness(trs, pub, 9, 2)
	if err != nil || mean != 4.0/3 || largest != 2 {
		t.Errorf("staleness: mean %v largest %v err %v, want 4/3, 2, nil", mean, largest, err)
	}
	if _, _, err := Staleness(trs, pub, 9, 1); err == nil || !strings.Contains(err.Error(), "turn 0 of a") || !strings.Contains(err.Error(), "rollout.max_staleness 1") {
		t.Errorf("staleness with k 1: error %v, want turn 0 of a named above rollout.max_staleness 1", err)
	}
	// An update that took no optimizer step publishes no new version:
	// its weights are not older.
	if got := versionLag(3, []int{0, 3}, 3); got != 0 {
		t.Errorf("lag %d under unchanged weights, want 0", got)
	}
}
