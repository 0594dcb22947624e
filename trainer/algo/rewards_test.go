package algo

import (
	"math"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

func TestTokenRewardsTwoTurn(t *testing.T) {
	tr := twoTurn("a", 0, 1)
	// process reward 0.5 at the last action token of turn 0 (3), outcome
	// 1 at the last action token (7); kl 1 on every token, beta 0.1,
	// charged on the action tokens 2, 3, 6, 7 only.
	kl := []float32{1, 1, 1, 1, 1, 1, 1, 1}
	got := tokenRewards(tr, kl, 0.1)
	want := []float64{0, 0, -0.1, 0.4, 0, 0, -0.1, 0.9}
	for i := range want {
		if !near(got[i], want[i]) {
			t.Errorf("r[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	// score = 1 + 0.5 - 0.1*4 = 1.1 = sum of the token rewards
	if s := score(tr, kl, 0.1); !near(s, 1.1) {
		t.Errorf("score = %v, want 1.1", s)
	}
}

// Turn 1 generated nothing (its tool response follows turn 0's directly):
// its process reward joins turn 0's at the last action token before it.
// When turn 0 generated nothing, its reward waits at the first action
// token. With no action token at all, nothing lands but the score counts.
func TestTokenRewardsTurnsWithoutActions(t *testing.T) {
	tr := &trajectory.Trajectory{
		PromptLen: 1,
		Tokens:    make([]int32, 6),
		Mask:      []uint8{0, 1, 0, 0, 1, 1},
		TurnOf:    []int16{-1, 0, 0, 1, 2, 2},
		Outcome:   1,
		Turns:     []trajectory.Turn{{ProcessReward: 0.1}, {ProcessReward: 0.2}, {ProcessReward: 0.3}},
	}
	got := tokenRewards(tr, nil, 0)
	want := []float64{0, 0.1 + 0.2, 0, 0, 0, 0.3 + 1}
	for i := range want {
		if !near(got[i], want[i]) {
			t.Errorf("skipped turn: r[%d] = %v, want %v", i, got[i], want[i])
		}
	}

	tr.Mask = []uint8{0, 0, 0, 0, 1, 1} // turns 0 and 1 generated nothing
	got = tokenRewards(tr, nil, 0)
	want = []float64{0, 0, 0, 0, 0.1 + 0.2, 0.3 + 1}
	for i := range want {
		if !near(got[i], want[i]) {
			t.Errorf("late first action: r[%d] = %v, want %v", i, got[i], want[i])
		}
	}

	tr.Mask = []uint8{0, 0, 0, 0, 0, 0}
	for i, r := range tokenRewards(tr, nil, 0) {
		if r != 0 {
			t.Errorf("no action: r[%d] = %v, want 0", i, r)
		}
	}
	if s := score(tr, nil, 0); !near(s, 1.6) {
		t.Errorf("no action: score = %v, want 1 + 0.1 + 0.2 + 0.3 = 1.6", s)
	}
}

func TestCheckBatchNamesTheFault(t *testing.T) {
	cases := map[string]func(*trajectory.Trajectory){
		"mask bits":      func(t *trajectory.Trajectory) { t.Mask = t.Mask[:3] },
		"prompt length":  func(t *trajectory.Trajectory) { t.PromptLen = 9 },
		"turn 2 of 2":    func(t *trajectory.Trajectory) { t.TurnOf[7] = 2 },
		"outside any":    func(t *trajectory.Trajectory) { t.Mask[1] = 1 },
		"outcome reward": func(t *trajectory.Trajectory) { t.Outcome = math.NaN() },
		"process reward": func(t *trajectory.Trajectory) { t.Turns[1].ProcessReward = math.Inf(1) },
		"value":          func(t *trajectory.Trajectory) { t.Values[3] = float32(math.NaN()) },
	}
	for want, breakIt := range cases {
		tr := twoTurn("broken", 0, 1)
		breakIt(tr)
		err := checkBatch([]*trajectory.Trajectory{tr}, nil, true)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"broken"`) {
			t.Errorf("%s: err = %v", want, err)
		}
	}
	if err := checkBatch([]*trajectory.Trajectory{nil}, nil, false); err == nil {
		t.Error("nil trajectory accepted")
	}
	if err := checkBatch([]*trajectory.Trajectory{twoTurn("a", 0, 1)}, [][]float32{nil, nil}, false); err == nil {
		t.Error("two kl slices for one trajectory accepted")
	}
	kl := [][]float32{{0, 0, 0, float32(math.NaN()), 0, 0, 0, 0}}
	if err := checkBatch([]*trajectory.Trajectory{twoTurn("a", 0, 1)}, kl, false); err == nil {
		t.Error("NaN kl on an action token accepted")
	}
}
