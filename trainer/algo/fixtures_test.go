package algo

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// twoTurn is the hand-worked multi-turn trajectory of the golden tests:
//
//	index   0  1 | 2  3 | 4  5 | 6  7
//	role    prompt | turn-0 action | turn-0 tool response | turn-1 action
//	mask    0  0 | 1  1 | 0  0 | 1  1
//	turnOf -1 -1 | 0  0 | 0  0 | 1  1
//	value  .3 .2 | .5 .4 | .9 .7 | .6 .8
//
// with process reward 0.5 for turn 0 (entering at token 3), 0 for turn 1,
// and the outcome entering at token 7.
func twoTurn(id string, group int, outcome float64) *trajectory.Trajectory {
	return &trajectory.Trajectory{
		ID:        id,
		Group:     group,
		Outcome:   outcome,
		PromptLen: 2,
		Tokens:    []int32{10, 11, 20, 21, 30, 31, 40, 41},
		Mask:      []uint8{0, 0, 1, 1, 0, 0, 1, 1},
		TurnOf:    []int16{-1, -1, 0, 0, 0, 0, 1, 1},
		Values:    []float32{0.3, 0.2, 0.5, 0.4, 0.9, 0.7, 0.6, 0.8},
		Turns:     []trajectory.Turn{{ProcessReward: 0.5}, {ProcessReward: 0}},
	}
}

// oneTurn is a single-turn trajectory: one prompt token, then n action
// tokens of turn 0, the outcome entering at the last one; values are 0.
func oneTurn(id string, group int, n int, outcome float64) *trajectory.Trajectory {
	t := &trajectory.Trajectory{ID: id, Group: group, Outcome: outcome, PromptLen: 1, Turns: []trajectory.Turn{{}}}
	for i := 0; i <= n; i++ {
		t.Tokens = append(t.Tokens, int32(i))
		t.Mask = append(t.Mask, uint8(min(i, 1)))
		t.TurnOf = append(t.TurnOf, int16(min(i, 1)-1))
		t.Values = append(t.Values, 0)
	}
	return t
}

const tol = 1e-6

func near(a, b float64) bool { return math.Abs(a-b) <= tol*max(1, math.Abs(b)) }

func assertSlice(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values %v, want %d %v", what, len(got), got, len(want), want)
	}
	for i := range want {
		if !near(float64(got[i]), want[i]) {
			t.Errorf("%s[%d] = %.9g, want %.9g (all: %v)", what, i, got[i], want[i], got)
		}
	}
}

func noWhiten(gamma, lambda float64) Options {
	opt := DefaultOptions()
	opt.Gamma, opt.Lambda, opt.Whiten = gamma, lambda, false
	return opt
}
