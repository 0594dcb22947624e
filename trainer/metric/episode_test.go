package metric

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// Evidence recall, worked out by hand over four episodes: a 1-hop one
// that found its passage (1), a 2-hop one that found one of two (0.5), a
// 2-hop one that found none (0), and an episode whose task names no
// supporting passages, which counts for neither. Overall (1 + 0.5 + 0) / 3,
// 1-hop 1, 2-hop 0.25; the two segments of the 2-hop episode that found
// one count once.
func TestEvidenceRecall(t *testing.T) {
	ep := func(group, hops, support, evidence int) *trajectory.Trajectory {
		return &trajectory.Trajectory{Group: group, Hops: hops, Support: support, Evidence: evidence}
	}
	m := Episodes(Eval, []*trajectory.Trajectory{ep(0, 1, 1, 1), ep(1, 2, 2, 1), ep(1, 2, 2, 1), ep(2, 2, 2, 0), ep(3, 3, 0, 0)})
	for k, want := range map[string]float64{EvidenceRecall: 0.5, EvidenceHop(1): 1, EvidenceHop(2): 0.25} {
		if got, ok := m[Eval+k]; !ok || math.Abs(got-want) > 1e-15 {
			t.Errorf("%s = %v (recorded %v), want %v", Eval+k, got, ok, want)
		}
	}
	if _, ok := m[Eval+EvidenceHop(3)]; ok {
		t.Errorf("%s recorded for tasks that name no supporting passages", EvidenceHop(3))
	}
	if _, ok := Episodes("", []*trajectory.Trajectory{ep(0, 1, 0, 0)})[EvidenceRecall]; ok {
		t.Errorf("%s recorded where no task names its supporting passages", EvidenceRecall)
	}
}
