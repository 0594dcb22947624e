package algo

import (
	"math"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// groupBatch is a batch of three groups:
//
//	group 0: two-turn outcome 1 -> score 1 + 0.5 = 1.5
//	         two-turn outcome 0 -> score 0 + 0.5 = 0.5
//	         one-turn outcome 1 -> score 1
//	         one-turn outcome 0 -> score 0
//	group 1: one sample (outcome 1)
//	group 2: two samples, both outcome 0.7
//
// Group 0: mean 0.75, deviations 0.75, -0.25, 0.25, -0.75, squares sum to
// 1.25, Bessel-corrected std sqrt(1.25/3).
func groupBatch() []*trajectory.Trajectory {
	return []*trajectory.Trajectory{
		twoTurn("g0s0", 0, 1),
		oneTurn("g1s0", 1, 2, 1),
		twoTurn("g0s1", 0, 0),
		oneTurn("g2s0", 2, 2, 0.7),
		oneTurn("g0s2", 0, 3, 1),
		oneTurn("g2s1", 2, 3, 0.7),
		oneTurn("g0s3", 0, 1, 0),
	}
}

// wantBroadcast is the advantage vector of tr when a is broadcast to the
// credited tokens: action tokens with the mask on, tokens after the prompt
// with it off.
func wantBroadcast(tr *trajectory.Trajectory, a float64, maskOn bool) []float64 {
	w := make([]float64, len(tr.Tokens))
	for i := tr.PromptLen; i < len(w); i++ {
		if !maskOn || tr.Mask[i] == 1 {
			w[i] = a
		}
	}
	return w
}

func checkOutcome(t *testing.T, batch []*trajectory.Trajectory, want map[string]float64, maskOn bool) {
	t.Helper()
	for _, tr := range batch {
		w := wantBroadcast(tr, want[tr.ID], maskOn)
		assertSlice(t, tr.ID+" advantages", tr.Advantages, w)
		assertSlice(t, tr.ID+" returns", tr.Returns, w)
	}
}

func TestGRPONormalisedByStd(t *testing.T) {
	batch := groupBatch()
	if err := GRPO(batch, nil, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	d := math.Sqrt(1.25/3) + 1e-6
	checkOutcome(t, batch, map[string]float64{
		"g0s0": 0.75 / d, "g0s1": -0.25 / d, "g0s2": 0.25 / d, "g0s3": -0.75 / d,
		"g1s0": 0,            // a group of one has no baseline
		"g2s0": 0, "g2s1": 0, // equal scores: 0 / (0 + eps)
	}, true)
}

func TestGRPODrGRPOWithoutStd(t *testing.T) {
	batch := groupBatch()
	opt := DefaultOptions()
	opt.NormByStd = false
	if err := GRPO(batch, nil, opt); err != nil {
		t.Fatal(err)
	}
	checkOutcome(t, batch, map[string]float64{
		"g0s0": 0.75, "g0s1": -0.25, "g0s2": 0.25, "g0s3": -0.75,
	}, true)
}

// Mask off: the two-turn samples also credit their tool-response tokens
// 4 and 5, never the prompt.
func TestGRPOMaskOff(t *testing.T) {
	batch := groupBatch()
	opt := DefaultOptions()
	opt.NormByStd, opt.AdvantageMask = false, false
	if err := GRPO(batch, nil, opt); err != nil {
		t.Fatal(err)
	}
	assertSlice(t, "g0s0 advantages", batch[0].Advantages, []float64{0, 0, 0.75, 0.75, 0.75, 0.75, 0.75, 0.75})
	checkOutcome(t, batch, map[string]float64{
		"g0s0": 0.75, "g0s1": -0.25, "g0s2": 0.25, "g0s3": -0.75,
	}, false)
}

// KL in reward enters the score: both samples have outcome 1, sample a has
// kl 1 on both action tokens, beta 0.5: scores 1 - 0.5*2 = 0 and 1, mean
// 0.5, Dr. GRPO advantages -0.5 and 0.5.
func TestGRPOKLInScore(t *testing.T) {
	batch := []*trajectory.Trajectory{oneTurn("a", 0, 2, 1), oneTurn("b", 0, 2, 1)}
	opt := DefaultOptions()
	opt.NormByStd, opt.KLCoef = false, 0.5
	if err := GRPO(batch, [][]float32{{0, 1, 1}, nil}, opt); err != nil {
		t.Fatal(err)
	}
	checkOutcome(t, batch, map[string]float64{"a": -0.5, "b": 0.5}, true)
}

// Groups are per iteration: the same Group index in two iterations is two
// groups of one, so both advantages are 0.
func TestGRPOGroupsSplitByIteration(t *testing.T) {
	a, b := oneTurn("a", 0, 1, 1), oneTurn("b", 0, 1, 0)
	b.Iteration = 1
	if err := GRPO([]*trajectory.Trajectory{a, b}, nil, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	checkOutcome(t, []*trajectory.Trajectory{a, b}, map[string]float64{}, true)
}

// Rewards whose spread overflows the group's standard deviation (1e200
// and 0: the squared deviations are 1e400) are an error naming the group
// and its first trajectory, for GRPO and GiGPO, not advantages divided by
// +Inf into 0; and the whitening estimators refuse advantages that
// overflowed float32, not a variance of +Inf that scales them to 0.
func TestOverflowingRewardsAreAnError(t *testing.T) {
	for _, name := range []string{"grpo", "gigpo", "reinforce_pp", "reinforce_pp_baseline"} {
		est, err := Get(name)
		if err != nil {
			t.Fatal(err)
		}
		batch := []*trajectory.Trajectory{oneTurn("big", 4, 2, 1e200), oneTurn("small", 4, 2, 0)}
		err = est.Advantages(batch, nil, DefaultOptions())
		want := map[bool]string{true: `group 4 (trajectory "big"): rewards up to 1e+200 overflow`, false: `trajectory "big", token`}[name == "grpo" || name == "gigpo"]
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", name, err, want)
		}
	}
}
