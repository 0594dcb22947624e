package algo

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// DAPO's equation 13 at hand-worked points, Lmax = 100, L = 20 (the
// penalty starts after 80 tokens): 80 tokens 0; 85: (80-85)/20 = -0.25;
// 90: -0.5; 100: -1; 120 (past the budget): -1. With penalty_factor 0.5
// each is halved.
func TestOverlongPenalty(t *testing.T) {
	cases := []struct {
		n            int
		factor, want float64
	}{
		{50, 1, 0}, {80, 1, 0}, {85, 1, -0.25}, {90, 1, -0.5}, {100, 1, -1}, {120, 1, -1},
		{90, 0.5, -0.25}, {100, 0.5, -0.5}, {90, 0, 0},
	}
	for _, c := range cases {
		if got := OverlongPenalty(c.n, 100, 20, c.factor); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("%d tokens, factor %v: penalty %v, want %v", c.n, c.factor, got, c.want)
		}
	}
}

// The penalty reaches the rewards, and so the group's advantages: a group
// of two with rewards 1 and 1 (no signal) whose second episode is 95
// tokens long under Lmax 100, L 20 gets 1 - 0.75 = 0.25 for it; GRPO's
// advantages are then (r - mean)/(std + eps) with mean 0.625 and the
// Bessel std 0.53033: +-0.70711.
func TestPunishOverlongShapesAdvantages(t *testing.T) {
	mk := func(sample, n int) *trajectory.Trajectory {
		tr := &trajectory.Trajectory{Group: 0, Sample: sample, Outcome: 1, Reward: 1, Tokens: make([]int32, n), Mask: make([]uint8, n),
			TurnOf: make([]int16, n), Turns: make([]trajectory.Turn, 1)}
		for j := range tr.TurnOf {
			tr.TurnOf[j] = -1
		}
		tr.Mask[n-1], tr.TurnOf[n-1] = 1, 0
		return tr
	}
	batch := []*trajectory.Trajectory{mk(0, 40), mk(1, 95)}
	o := Overlong{Buffer: 20, MaxLen: 100, PenaltyFactor: 1}
	if mean := o.PunishOverlong(batch); math.Abs(mean-(-0.375)) > 1e-15 {
		t.Errorf("mean penalty %v, want -0.375", mean)
	}
	if batch[0].Reward != 1 || batch[1].Reward != 0.25 || batch[1].Outcome != 0.25 || batch[1].Components[OverlongPenaltyComponent] != -0.75 {
		t.Fatalf("rewards %v %v (component %v), want 1 and 0.25 (-0.75)", batch[0].Reward, batch[1].Reward, batch[1].Components)
	}
	est, err := Get("grpo")
	if err != nil {
		t.Fatal(err)
	}
	if err := est.Advantages(batch, nil, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	want := 0.375 / (math.Sqrt(2*0.375*0.375) + DefaultOptions().Eps)
	if a0, a1 := float64(batch[0].Advantages[39]), float64(batch[1].Advantages[94]); math.Abs(a0-want) > 1e-6 || math.Abs(a1+want) > 1e-6 {
		t.Errorf("advantages %v %v, want +-%v", a0, a1, want)
	}
}

// Overlong filtering masks exactly the episodes the token budget cut:
// not those stopped by the turn limit, an answer or an error; without
// the setting nothing is masked.
func TestFilterOverlong(t *testing.T) {
	stops := []trajectory.StopReason{trajectory.StopAnswer, trajectory.StopMaxTokens, trajectory.StopMaxTurns, trajectory.StopMaxTokens, trajectory.StopNoToolCall}
	var batch []*trajectory.Trajectory
	for i, s := range stops {
		batch = append(batch, &trajectory.Trajectory{Sample: i, Stop: s})
	}
	kept, masked := Overlong{Filter: true}.FilterOverlong(batch)
	if masked != 2 || len(kept) != 3 || kept[0].Sample != 0 || kept[1].Sample != 2 || kept[2].Sample != 4 {
		t.Errorf("kept %d (masked %d), want samples 0, 2, 4 kept and 2 masked", len(kept), masked)
	}
	if kept, masked := (Overlong{}).FilterOverlong(batch); masked != 0 || len(kept) != len(batch) {
		t.Errorf("without the filter %d kept, %d masked, want all kept", len(kept), masked)
	}
}
