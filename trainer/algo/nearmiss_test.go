package algo

import (
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// ep builds an episode of group g, sample s: a prompt of two tokens, then
// per turn two action tokens and, but after the last turn, one observation
// token; turn j retrieved ev[j] new supporting passages.
func ep(g, s int, correct bool, stop trajectory.StopReason, ev ...int) *trajectory.Trajectory {
	t := &trajectory.Trajectory{Group: g, Sample: s, Correct: correct, Stop: stop, PromptLen: 2,
		Tokens: []int32{0, 0}, Mask: []uint8{0, 0}, TurnOf: []int16{-1, -1}}
	for j, e := range ev {
		t.Turns = append(t.Turns, trajectory.Turn{Evidence: e})
		t.Evidence += e
		t.Tokens = append(t.Tokens, 1, 1)
		t.Mask = append(t.Mask, 1, 1)
		t.TurnOf = append(t.TurnOf, int16(j), int16(j))
		if j < len(ev)-1 {
			t.Tokens = append(t.Tokens, 2)
			t.Mask = append(t.Mask, 0)
			t.TurnOf = append(t.TurnOf, int16(j))
		}
	}
	return t
}

// Per group the wrong episode with the most evidence (ties to the lower
// sample), cut after its last evidence turn; right answers, failures,
// continuations, episodes without evidence or ending on their evidence
// turn are passed over.
func TestNearMisses(t *testing.T) {
	a := trajectory.StopAnswer
	cont := ep(3, 2, false, a, 1, 1, 0)
	cont.ContinuedFrom = "x"
	batch := []*trajectory.Trajectory{
		ep(0, 0, true, a, 1, 1, 0),                        // right
		ep(0, 1, false, a, 1, 0, 0),                       // one passage
		ep(0, 2, false, trajectory.StopMaxTurns, 1, 1),    // two, but ends on its evidence turn
		ep(0, 3, false, a, 0, 1, 1, 0),                    // two: picked, cut after turn 2
		ep(0, 4, false, trajectory.StopMaxTurns, 1, 1, 0), // two as well, later sample
		ep(1, 0, false, a, 0, 0),                          // no evidence
		ep(1, 1, true, a, 1, 0),                           // right
		ep(2, 0, false, trajectory.StopError, 1, 0),       // failed
		ep(2, 1, false, trajectory.StopMaxTurns, 1, 0, 0), // a truncated near miss
		cont,
	}
	got := NearMisses(batch)
	if len(got) != 2 || got[0].Episode != batch[3] || got[0].Turns != 3 || got[1].Episode != batch[8] || got[1].Turns != 1 {
		t.Fatalf("near misses %+v; want group 0 sample 3 after 3 turns and group 2 sample 1 after 1", got)
	}
	if s := batch[3].TurnStart(3); s != 2+3*3 {
		t.Fatalf("turn 3 of group 0 sample 3 starts at %d, want 11", s)
	}
}
