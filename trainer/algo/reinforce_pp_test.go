package algo

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// gamma = 0.5 over the two-turn trajectory (r3 = 0.5, r7 = 1). The return
// steps over the action tokens 7, 6, 3, 2, skipping the tool response:
//
//	G7 = 1, G6 = 0.5*1 = 0.5, G3 = 0.5 + 0.5*0.5 = 0.75, G2 = 0.5*0.75 = 0.375
//
// Whitening over those four: sum 2.625, mean 0.65625; deviations
// -0.28125, 0.09375, -0.15625, 0.34375; squares 0.0791015625,
// 0.0087890625, 0.0244140625, 0.1181640625 sum to 0.23046875;
// Bessel-corrected variance 0.23046875/3. The tool-response tokens 4, 5
// carry the return of the next step, G6 = 0.5, and are whitened with the
// same statistics.
func TestReinforcePPTwoTurn(t *testing.T) {
	tr := twoTurn("a", 0, 1)
	opt := DefaultOptions()
	opt.Gamma = 0.5
	if err := ReinforcePP([]*trajectory.Trajectory{tr}, nil, opt); err != nil {
		t.Fatal(err)
	}
	assertSlice(t, "returns", tr.Returns, []float64{0, 0, 0.375, 0.75, 0.5, 0.5, 0.5, 1})
	sd := math.Sqrt(0.23046875/3 + 1e-8)
	w := func(g float64) float64 { return (g - 0.65625) / sd }
	assertSlice(t, "advantages", tr.Advantages, []float64{0, 0, w(0.375), w(0.75), w(0.5), w(0.5), w(0.5), w(1)})
}

// Mask off, gamma = 0.5, stepping through the tool tokens too:
//
//	G7 = 1, G6 = 0.5, G5 = 0.25, G4 = 0.125, G3 = 0.5 + 0.0625 = 0.5625, G2 = 0.28125
//
// sum 2.71875 over six tokens, mean 0.453125; deviations -0.171875,
// 0.109375, -0.328125, -0.203125, 0.046875, 0.546875; squares sum to
// 0.49169921875; Bessel-corrected variance 0.49169921875/5.
func TestReinforcePPMaskOff(t *testing.T) {
	tr := twoTurn("a", 0, 1)
	opt := DefaultOptions()
	opt.Gamma, opt.AdvantageMask = 0.5, false
	if err := ReinforcePP([]*trajectory.Trajectory{tr}, nil, opt); err != nil {
		t.Fatal(err)
	}
	g := []float64{0, 0, 0.28125, 0.5625, 0.125, 0.25, 0.5, 1}
	assertSlice(t, "returns", tr.Returns, g)
	sd := math.Sqrt(0.49169921875/5 + 1e-8)
	want := make([]float64, len(g))
	for i := 2; i < len(g); i++ {
		want[i] = (g[i] - 0.453125) / sd
	}
	assertSlice(t, "advantages", tr.Advantages, want)
}

// Whitening is global over the batch: two one-turn trajectories, gamma 1,
// outcomes 1 (one action token) and -1 (three action tokens):
// tokens 1, -1, -1, -1; mean -0.5; deviations 1.5, -0.5 x3; squares
// 2.25 + 3*0.25 = 3; variance 3/3 = 1; whitened 1.5 and -0.5.
func TestReinforcePPWhitensAcrossBatch(t *testing.T) {
	a, b := oneTurn("a", 0, 1, 1), oneTurn("b", 1, 3, -1)
	if err := ReinforcePP([]*trajectory.Trajectory{a, b}, nil, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	assertSlice(t, "a advantages", a.Advantages, []float64{0, 1.5})
	assertSlice(t, "b advantages", b.Advantages, []float64{0, -0.5, -0.5, -0.5})
	assertSlice(t, "b returns", b.Returns, []float64{0, -1, -1, -1})
}

// One group: a scores 1 on one action token, b scores 0 on three; group
// mean 0.5, so 0.5 and -0.5 before whitening. Token values 0.5, -0.5 x3:
// mean -0.25, deviations 0.75, -0.25 x3, squares sum 0.5625 + 0.1875 =
// 0.75, variance 0.75/3 = 0.25, std 0.5: whitened 1.5 and -0.5.
func TestReinforcePPBaseline(t *testing.T) {
	a, b := oneTurn("a", 0, 1, 1), oneTurn("b", 0, 3, 0)
	if err := ReinforcePPBaseline([]*trajectory.Trajectory{a, b}, nil, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	assertSlice(t, "a advantages", a.Advantages, []float64{0, 1.5})
	assertSlice(t, "b advantages", b.Advantages, []float64{0, -0.5, -0.5, -0.5})
	assertSlice(t, "a returns", a.Returns, []float64{0, 0.5})
	assertSlice(t, "b returns", b.Returns, []float64{0, -0.5, -0.5, -0.5})
}

// A singleton group is its own mean. a and b (group 0, one action token
// each, scores 1 and 0) centre to 0.5 and -0.5; c (group 1 alone, score 5,
// two action tokens) to 0, 0. Tokens 0.5, -0.5, 0, 0: mean 0, squares sum
// 0.5, variance 0.5/3 = 1/6, so a = 0.5*sqrt(6) = sqrt(1.5), b = -sqrt(1.5),
// c = 0.
func TestReinforcePPBaselineSingleton(t *testing.T) {
	a, b, c := oneTurn("a", 0, 1, 1), oneTurn("b", 0, 1, 0), oneTurn("c", 1, 2, 5)
	if err := ReinforcePPBaseline([]*trajectory.Trajectory{a, b, c}, nil, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	assertSlice(t, "a advantages", a.Advantages, []float64{0, math.Sqrt(1.5)})
	assertSlice(t, "b advantages", b.Advantages, []float64{0, -math.Sqrt(1.5)})
	assertSlice(t, "c advantages", c.Advantages, []float64{0, 0, 0})
}

// Mask off, one group of two two-turn samples with scores 1.5 and 0.5:
// +0.5 and -0.5 on the six tokens after each prompt; mean 0, squares sum
// 12*0.25 = 3, variance 3/11: whitened +-0.5/sqrt(3/11); prompts stay 0.
func TestReinforcePPBaselineMaskOff(t *testing.T) {
	a, b := twoTurn("a", 0, 1), twoTurn("b", 0, 0)
	opt := DefaultOptions()
	opt.AdvantageMask = false
	if err := ReinforcePPBaseline([]*trajectory.Trajectory{a, b}, nil, opt); err != nil {
		t.Fatal(err)
	}
	w := 0.5 / math.Sqrt(3.0/11+1e-8)
	assertSlice(t, "a advantages", a.Advantages, []float64{0, 0, w, w, w, w, w, w})
	assertSlice(t, "b advantages", b.Advantages, []float64{0, 0, -w, -w, -w, -w, -w, -w})
}
