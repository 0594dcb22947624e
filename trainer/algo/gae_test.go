package algo

import (
	"math"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// gamma = 0.9, lambda = 0.8, so gamma*lambda = 0.72. Rewards: r3 = 0.5
// (turn-0 process reward), r7 = 1 (outcome). The recursion visits the
// action tokens 7, 6, 3, 2; token 3 bootstraps from V6 = 0.6, not from the
// tool-response value V4 = 0.9:
//
//	d7 = 1 + 0.9*0 - 0.8           =  0.2      A7 = 0.2                     R7 = 1.0
//	d6 = 0 + 0.9*0.8 - 0.6         =  0.12     A6 = 0.12 + 0.72*0.2 = 0.264 R6 = 0.864
//	d3 = 0.5 + 0.9*0.6 - 0.4       =  0.64     A3 = 0.64 + 0.72*0.264 = 0.83008   R3 = 1.23008
//	d2 = 0 + 0.9*0.4 - 0.5         = -0.14     A2 = -0.14 + 0.72*0.83008 = 0.4576576 R2 = 0.9576576
//
// The tool-response tokens 4, 5 are not steps: they carry the advantage
// of the next step, A6 = 0.264, and their return is that plus their own
// value: R4 = 0.264 + 0.9 = 1.164, R5 = 0.264 + 0.7 = 0.964 (what the
// losses see there when the loss mask is off).
var (
	gaeTwoTurnAdv = []float64{0, 0, 0.4576576, 0.83008, 0.264, 0.264, 0.264, 0.2}
	gaeTwoTurnRet = []float64{0, 0, 0.9576576, 1.23008, 1.164, 0.964, 0.864, 1.0}
)

func TestGAETwoTurnSkipsToolResponse(t *testing.T) {
	tr := twoTurn("a", 0, 1)
	if err := GAE([]*trajectory.Trajectory{tr}, nil, noWhiten(0.9, 0.8)); err != nil {
		t.Fatal(err)
	}
	assertSlice(t, "advantages", tr.Advantages, gaeTwoTurnAdv)
	assertSlice(t, "returns", tr.Returns, gaeTwoTurnRet)
}

// With the advantage mask off every token after the prompt is a step; the
// tool-response tokens 4, 5 use their own values and reward 0:
//
//	A7 = 0.2, A6 = 0.264 as above
//	d5 = 0 + 0.9*0.6 - 0.7   = -0.16   A5 = -0.16 + 0.72*0.264 = 0.03008         R5 = 0.73008
//	d4 = 0 + 0.9*0.7 - 0.9   = -0.27   A4 = -0.27 + 0.72*0.03008 = -0.2483424    R4 = 0.6516576
//	d3 = 0.5 + 0.9*0.9 - 0.4 =  0.91   A3 = 0.91 - 0.72*0.2483424 = 0.731193472 R3 = 1.131193472
//	d2 = 0 + 0.9*0.4 - 0.5   = -0.14   A2 = -0.14 + 0.72*0.731193472 = 0.38645929984
//	                                   R2 = 0.88645929984
func TestGAETwoTurnMaskOff(t *testing.T) {
	tr := twoTurn("a", 0, 1)
	opt := noWhiten(0.9, 0.8)
	opt.AdvantageMask = false
	if err := GAE([]*trajectory.Trajectory{tr}, nil, opt); err != nil {
		t.Fatal(err)
	}
	assertSlice(t, "advantages", tr.Advantages,
		[]float64{0, 0, 0.38645929984, 0.731193472, -0.2483424, 0.03008, 0.264, 0.2})
	assertSlice(t, "returns", tr.Returns,
		[]float64{0, 0, 0.88645929984, 1.131193472, 0.6516576, 0.73008, 0.864, 1.0})
}

// Whitening the golden advantages over the four action tokens:
// sum = 1.7517376, mean = 0.4379344; deviations 0.0197232, 0.3921456,
// -0.1739344, -0.2379344; squares sum to 0.24103313042432, so the
// Bessel-corrected variance is 0.24103313042432/3. The carried advantages
// of tokens 4, 5 are whitened with the same statistics. Returns stay
// unwhitened.
func TestGAEWhiten(t *testing.T) {
	tr := twoTurn("a", 0, 1)
	opt := noWhiten(0.9, 0.8)
	opt.Whiten = true
	if err := GAE([]*trajectory.Trajectory{tr}, nil, opt); err != nil {
		t.Fatal(err)
	}
	sd := math.Sqrt(0.24103313042432/3 + 1e-8)
	want := make([]float64, len(gaeTwoTurnAdv))
	for _, i := range []int{2, 3, 4, 5, 6, 7} {
		want[i] = (gaeTwoTurnAdv[i] - 0.4379344) / sd
	}
	assertSlice(t, "advantages", tr.Advantages, want)
	assertSlice(t, "returns", tr.Returns, gaeTwoTurnRet)
}

// KL in reward: gamma = lambda = 1 and V = 0 make A_t the reward-to-go.
// kl = 1, 2, 3 on the three action tokens, beta = 0.1, outcome 1:
// r = -0.1, -0.2, 1 - 0.3 = 0.7, so A = 0.4, 0.5, 0.7.
func TestGAEKLInReward(t *testing.T) {
	tr := oneTurn("a", 0, 3, 1)
	opt := noWhiten(1, 1)
	opt.KLCoef = 0.1
	kl := [][]float32{{9, 1, 2, 3}} // the prompt's 9 must be ignored
	if err := GAE([]*trajectory.Trajectory{tr}, kl, opt); err != nil {
		t.Fatal(err)
	}
	assertSlice(t, "advantages", tr.Advantages, []float64{0, 0.4, 0.5, 0.7})
}

func TestGAERejectsBadInput(t *testing.T) {
	noValues := twoTurn("novalues", 0, 1)
	noValues.Values = nil
	err := GAE([]*trajectory.Trajectory{noValues}, nil, DefaultOptions())
	if err == nil || !strings.Contains(err.Error(), `"novalues"`) {
		t.Errorf("missing values: err = %v, want one naming the trajectory", err)
	}
	err = GAE([]*trajectory.Trajectory{twoTurn("a", 0, 1)}, [][]float32{{1, 2}}, DefaultOptions())
	if err == nil || !strings.Contains(err.Error(), "kl") {
		t.Errorf("short kl: err = %v, want a kl length error", err)
	}
}
