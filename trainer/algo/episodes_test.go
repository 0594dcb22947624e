package algo

import (
	"math"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// segment is one segment of an episode: a prompt token and two action
// tokens of one turn with process reward pr.
func segment(id string, outcome, pr float64) *trajectory.Trajectory {
	return &trajectory.Trajectory{ID: id, Outcome: outcome, PromptLen: 1,
		Tokens: []int32{1, 2, 3}, Mask: []uint8{0, 1, 1}, TurnOf: []int16{-1, 0, 0},
		Turns: []trajectory.Turn{{ProcessReward: pr}}}
}

// A group of three episodes: A whole (outcome 1), B in two segments
// (outcome 0, process reward 0.5 in its first), C in three (outcome 1).
// Each episode counts once, with score A = 1, B = 0.5, C = 1: mean 5/6,
// Bessel std sqrt(((1/6)^2 + (1/3)^2 + (1/6)^2) / 2) = sqrt(1/12).
// GRPO: A = C = (1/6)/sqrt(1/12) = 0.57735, B = -(1/3)/sqrt(1/12) = -1.1547;
// RLOO: 3/2 (s - mean): A = C = 0.25, B = -0.5; every segment of an
// episode carries its episode's advantage on each action token.
func TestSegmentsShareTheEpisodeAdvantage(t *testing.T) {
	batch := func() []*trajectory.Trajectory {
		return []*trajectory.Trajectory{segment("0-train-0-0", 1, 0), segment("0-train-0-1", 0, 0.5), segment("0-train-0-1.1", 0, 0),
			segment("0-train-0-2", 1, 0), segment("0-train-0-2.1", 1, 0), segment("0-train-0-2.2", 1, 0)}
	}
	a, b := 1.0/6/math.Sqrt(1.0/12), -1.0/3/math.Sqrt(1.0/12)
	cases := []struct {
		name string
		est  func([]*trajectory.Trajectory, [][]float32, Options) error
		want []float64
	}{
		{"grpo", GRPO, []float64{a, b, b, a, a, a}},
		{"rloo", RLOO, []float64{0.25, -0.5, -0.5, 0.25, 0.25, 0.25}},
	}
	opt := DefaultOptions()
	opt.Eps = 0
	for _, c := range cases {
		tr := batch()
		if err := c.est(tr, nil, opt); err != nil {
			t.Fatal(err)
		}
		for i, seg := range tr {
			for j, m := range seg.Mask {
				want := float32(c.want[i]) * float32(m)
				if math.Abs(float64(seg.Advantages[j]-want)) > 1e-6 {
					t.Errorf("%s: %s token %d: advantage %v, want %v", c.name, seg.ID, j, seg.Advantages[j], want)
				}
			}
		}
	}
	// The echo-trap signal counts episodes: the std of 1, 0.5, 1.
	if got := GroupRewardStd(batch()); math.Abs(got-math.Sqrt(1.0/12)) > 1e-12 {
		t.Errorf("GroupRewardStd %v, want %v", got, math.Sqrt(1.0/12))
	}
}

// GiGPO refuses segments by name.
func TestGiGPORefusesSegments(t *testing.T) {
	err := GiGPO([]*trajectory.Trajectory{segment("0-train-0-0", 1, 0), segment("0-train-0-0.1", 1, 0), segment("0-train-0-1", 0, 0)}, nil, DefaultOptions())
	if err == nil || !strings.HasPrefix(err.Error(), "gigpo: episode 0-train-0-0 is split into segments") {
		t.Errorf("gigpo: %v, want a refusal naming it", err)
	}
}

// turn_rloo counts an episode's turns across its segments. Episode 1 is
// split: segment "0-train-0-0" holds turn 0 (process reward 0.5),
// "0-train-0-0.1" turn 1 (0.2), both with outcome 1 (given in the batch in
// reverse order). Episode 2 is whole: turns with process rewards 0.1 and
// 0, outcome 0. With TurnGamma 1 the returns are, by hand, 0.5+0.2+1 =
// 1.7 and 0.2+1 = 1.2 for episode 1, 0.1 and 0 for episode 2, so the
// leave-one-out advantages are 1.6, 1.2, -1.6 and -1.2: the outcome
// counted once, turn 1 compared with episode 2's turn 1.
func TestTurnRLOOCreditsAcrossSegments(t *testing.T) {
	second := &trajectory.Trajectory{ID: "0-train-0-0.1", Outcome: 1, PromptLen: 3,
		Tokens: []int32{1, 2, 9, 4}, Mask: []uint8{0, 0, 0, 1}, TurnOf: []int16{-1, -1, -1, 0},
		Turns: []trajectory.Turn{{ProcessReward: 0.2}}}
	whole := &trajectory.Trajectory{ID: "0-train-0-1", Outcome: 0, PromptLen: 1,
		Tokens: []int32{1, 5, 6, 7}, Mask: []uint8{0, 1, 0, 1}, TurnOf: []int16{-1, 0, 0, 1},
		Turns: []trajectory.Turn{{ProcessReward: 0.1}, {ProcessReward: 0}}}
	batch := []*trajectory.Trajectory{second, segment("0-train-0-0", 1, 0.5), whole}
	opt := DefaultOptions()
	opt.TurnGamma = 1
	if err := TurnRLOO(batch, nil, opt); err != nil {
		t.Fatal(err)
	}
	want := map[string][]float64{"0-train-0-0": {0, 1.6, 1.6}, "0-train-0-0.1": {0, 0, 0, 1.2}, "0-train-0-1": {0, -1.6, 0, -1.2}}
	for _, x := range batch {
		for j, w := range want[x.ID] {
			if math.Abs(float64(x.Advantages[j])-w) > 1e-6 {
				t.Errorf("%s token %d: advantage %v, want %v", x.ID, j, x.Advantages[j], w)
			}
		}
	}
}

func TestEpisodeOf(t *testing.T) {
	for id, want := range map[string]string{"3-train-0-1": "3-train-0-1", "3-train-0-1.2": "3-train-0-1", "3-eval-a.b-0-0": "3-eval-a.b-0-0",
		"x.": "x.", "": ""} {
		if got := EpisodeOf(&trajectory.Trajectory{ID: id}); got != want {
			t.Errorf("EpisodeOf(%q) = %q, want %q", id, got, want)
		}
	}
}
