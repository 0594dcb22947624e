package algo

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// episode builds a trajectory of group 0 from a prompt and its turns: each
// turn is its action tokens, then its tool response (mask 0; none for the
// last turn), with its process reward.
type turnSpec struct {
	action, obs []int32
	process     float64
}

func episode(id string, outcome float64, prompt []int32, turns ...turnSpec) *trajectory.Trajectory {
	t := &trajectory.Trajectory{ID: id, Outcome: outcome, PromptLen: len(prompt)}
	add := func(tok int32, mask uint8, turn int16) {
		t.Tokens, t.Mask, t.TurnOf = append(t.Tokens, tok), append(t.Mask, mask), append(t.TurnOf, turn)
	}
	for _, p := range prompt {
		add(p, 0, -1)
	}
	for j, tu := range turns {
		for _, a := range tu.action {
			add(a, 1, int16(j))
		}
		for _, o := range tu.obs {
			add(o, 0, int16(j))
		}
		t.Turns = append(t.Turns, trajectory.Turn{ProcessReward: tu.process})
	}
	return t
}

// gigpoGroup is the hand-worked GiGPO group, prompt [1 2]:
//
//	A: turn 0 acts [10 15], sees [20]; turn 1 acts [11] (process reward 0.5), sees [21]; turn 2 acts [12]; outcome 1
//	B: turn 0 acts [10 15], sees [20]; turn 1 acts [13], sees [22];                      turn 2 acts [12]; outcome 0
//	C: turn 0 acts [14],    sees [23]; turn 1 acts [12];                                                   outcome 1
//
// Anchor states (the history before a turn's first action token): every
// turn 0 has [1 2]; A's and B's turn 1 share [1 2 10 15 20] (same call,
// same response); C's turn 1 ([1 2 14 23]) and A's and B's turn 2 (their
// turn-1 calls differ) are alone. C is a turn shorter than A and B.
func gigpoGroup() []*trajectory.Trajectory {
	p := []int32{1, 2}
	return []*trajectory.Trajectory{
		episode("A", 1, p, turnSpec{[]int32{10, 15}, []int32{20}, 0}, turnSpec{[]int32{11}, []int32{21}, 0.5}, turnSpec{[]int32{12}, nil, 0}),
		episode("B", 0, p, turnSpec{[]int32{10, 15}, []int32{20}, 0}, turnSpec{[]int32{13}, []int32{22}, 0}, turnSpec{[]int32{12}, nil, 0}),
		episode("C", 1, p, turnSpec{[]int32{14}, []int32{23}, 0}, turnSpec{[]int32{12}, nil, 0}),
	}
}

// GiGPO by hand on gigpoGroup, turn_gamma 0.5, omega 1, no std division:
//
// Episode level: scores A = 1 + 0.5 = 1.5, B = 0, C = 1, mean 5/6:
// A^E = 2/3, -5/6, 1/6.
// Step rewards and returns R_k = r_k + 0.5 R_{k+1}:
//
//	A: r = 0, 0.5, 1   R = 0 + 0.5(1) = 0.5, 0.5 + 0.5(1) = 1, 1
//	B: r = 0, 0, 0     R = 0, 0, 0
//	C: r = 0, 1        R = 0.5, 1
//
// Step level: turn 0 {A 0.5, B 0, C 0.5}, mean 1/3: 1/6, -1/3, 1/6;
// turn 1 of A and B {1, 0}, mean 1/2: 1/2, -1/2; the rest alone: 0.
// A = A^E + A^S per turn:
//
//	A: 2/3 + 1/6 = 5/6,   2/3 + 1/2 = 7/6,   2/3
//	B: -5/6 - 1/3 = -7/6, -5/6 - 1/2 = -4/3, -5/6
//	C: 1/6 + 1/6 = 1/3,   1/6
//
// on each action token of the turn; prompt and tool responses get 0.
func TestGiGPOByHand(t *testing.T) {
	opt := DefaultOptions()
	opt.TurnGamma, opt.StepWeight, opt.NormByStd = 0.5, 1, false
	b := gigpoGroup()
	if err := GiGPO(b, nil, opt); err != nil {
		t.Fatal(err)
	}
	assertSlice(t, "A", b[0].Advantages, []float64{0, 0, 5. / 6, 5. / 6, 0, 7. / 6, 0, 2. / 3})
	assertSlice(t, "B", b[1].Advantages, []float64{0, 0, -7. / 6, -7. / 6, 0, -4. / 3, 0, -5. / 6})
	assertSlice(t, "C", b[2].Advantages, []float64{0, 0, 1. / 3, 0, 1. / 6})
	assertSlice(t, "C returns", b[2].Returns, []float64{0, 0, 1. / 3, 0, 1. / 6})

	// Advantage mask off: a tool response takes its turn's advantage.
	opt.AdvantageMask = false
	b = gigpoGroup()
	if err := GiGPO(b, nil, opt); err != nil {
		t.Fatal(err)
	}
	assertSlice(t, "A, advantage mask off", b[0].Advantages, []float64{0, 0, 5. / 6, 5. / 6, 5. / 6, 7. / 6, 7. / 6, 2. / 3})
}

// The same group with the std division (Bessel) and omega 0.5:
// episode scores {1.5, 0, 1}: std = sqrt(((2/3)^2 + (5/6)^2 + (1/6)^2)/2)
// = sqrt(7/12) = 0.763762616, A^E = 0.872871561, -1.091089451, 0.218217890;
// turn 0 {0.5, 0, 0.5}: std sqrt(1/12) = 0.288675135, A^S = (1/6)/0.288675135 =
// 0.577350269 for A; turn 1 {1, 0}: std sqrt(1/2), A^S = -0.707106781 for B.
//
//	A turn 0: 0.872871561 + 0.5(0.577350269)  = 1.161546696
//	B turn 1: -1.091089451 + 0.5(-0.707106781) = -1.444642842
//	C turn 1: 0.218217890 (alone at its anchor)
//
// (eps 1e-6 on each std moves these by about 1e-6.)
func TestGiGPONormalised(t *testing.T) {
	opt := DefaultOptions()
	opt.TurnGamma, opt.StepWeight = 0.5, 0.5
	b := gigpoGroup()
	if err := GiGPO(b, nil, opt); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what string
		got  float32
		want float64
	}{{"A turn 0", b[0].Advantages[2], 1.161546696}, {"B turn 1", b[1].Advantages[5], -1.444642842}, {"C turn 1", b[2].Advantages[4], 0.218217890}} {
		if math.Abs(float64(c.got)-c.want) > 1e-5 {
			t.Errorf("%s: %.9g, want %.9g", c.what, c.got, c.want)
		}
	}
}

// With omega 0 only the episode level is left: GiGPO is GRPO.
func TestGiGPOWithoutStepsIsGRPO(t *testing.T) {
	opt := DefaultOptions()
	opt.StepWeight = 0
	a, b := gigpoGroup(), gigpoGroup()
	if err := GiGPO(a, nil, opt); err != nil {
		t.Fatal(err)
	}
	if err := GRPO(b, nil, opt); err != nil {
		t.Fatal(err)
	}
	for i := range a {
		assertSlice(t, a[i].ID, a[i].Advantages, float64s(b[i].Advantages))
	}
}

func float64s(xs []float32) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

// turn_rloo by hand, turn_gamma 0.5, process rewards at several turns and
// three lengths, prompt [1]:
//
//	X: r = 0.2, 0.3, 1 (process 0.2, 0.3, outcome 1)  R = 0.2 + 0.5(0.8) = 0.6, 0.3 + 0.5(1) = 0.8, 1
//	Y: r = 0.1, -0.2 (process 0.1, -0.2, outcome 0)   R = 0.1 + 0.5(-0.2) = 0, -0.2
//	Z: r = 1 (outcome 1; two action tokens)           R = 1
//
// Leave-one-out baselines at each turn index, over the others that have it:
//
//	turn 0: X: (0 + 1)/2 = 0.5 -> 0.1;  Y: (0.6 + 1)/2 = 0.8 -> -0.8;  Z: (0.6 + 0)/2 = 0.3 -> 0.7
//	turn 1: X: Y's -0.2 -> 0.8 + 0.2 = 1;  Y: X's 0.8 -> -0.2 - 0.8 = -1
//	turn 2: X: nobody else -> baseline 0 -> 1
func TestTurnRLOOByHand(t *testing.T) {
	opt := DefaultOptions()
	opt.TurnGamma = 0.5
	p := []int32{1}
	b := []*trajectory.Trajectory{
		episode("X", 1, p, turnSpec{[]int32{5}, []int32{6}, 0.2}, turnSpec{[]int32{7}, []int32{8}, 0.3}, turnSpec{[]int32{9}, nil, 0}),
		episode("Y", 0, p, turnSpec{[]int32{5}, []int32{6}, 0.1}, turnSpec{[]int32{7}, nil, -0.2}),
		episode("Z", 1, p, turnSpec{[]int32{5, 9}, nil, 0}),
	}
	if err := TurnRLOO(b, nil, opt); err != nil {
		t.Fatal(err)
	}
	assertSlice(t, "X", b[0].Advantages, []float64{0, 0.1, 0, 1, 0, 1})
	assertSlice(t, "Y", b[1].Advantages, []float64{0, -0.8, 0, -1})
	assertSlice(t, "Z", b[2].Advantages, []float64{0, 0.7, 0.7})
	assertSlice(t, "Y returns", b[1].Returns, []float64{0, -0.8, 0, -1})
}

// turn_rloo is unbiased when the policy decides the episode's length. A
// two-parameter agent: at turn 0 it calls a tool with probability
// s1 = 0.6 (process reward 0.5, then turn 1) or answers at once (outcome
// 0.3, a one-turn episode); at turn 1 it answers right with probability
// s2 = 0.3 (outcome 1) or wrong (0). With turn_gamma 1 the objective is
//
//	J = (1 - s1) 0.3 + s1 (0.5 + s2)
//	dJ/dtheta1 = s1 (1 - s1) (0.5 + s2 - 0.3) = 0.24 (0.5) = 0.12   (s = sigmoid(theta))
//	dJ/dtheta2 = s1 s2 (1 - s2)               = 0.6 (0.21) = 0.126
//
// The estimator's gradient for the first of a group of two is
// sum_k d log pi(a_k)/d theta * A_k, with d log pi/d theta1 = 1 - s1
// (call) or -s1 (answer), d log pi/d theta2 = 1 - s2 (right) or -s2
// (wrong). Its expectation over the 3 x 3 outcome pairs must equal dJ.
func TestTurnRLOOUnbiasedOverLengths(t *testing.T) {
	const s1, s2 = 0.6, 0.3
	type outcome struct {
		p      float64
		build  func() *trajectory.Trajectory
		g1, g2 float64 // d log pi / d theta1 at turn 0, d log pi / d theta2 at turn 1
	}
	p := []int32{1}
	outs := []outcome{
		{1 - s1, func() *trajectory.Trajectory { return episode("answer", 0.3, p, turnSpec{[]int32{2}, nil, 0}) }, -s1, 0},
		{s1 * s2, func() *trajectory.Trajectory {
			return episode("right", 1, p, turnSpec{[]int32{3}, []int32{4}, 0.5}, turnSpec{[]int32{5}, nil, 0})
		}, 1 - s1, 1 - s2},
		{s1 * (1 - s2), func() *trajectory.Trajectory {
			return episode("wrong", 0, p, turnSpec{[]int32{3}, []int32{4}, 0.5}, turnSpec{[]int32{6}, nil, 0})
		}, 1 - s1, -s2},
	}
	opt := DefaultOptions()
	opt.TurnGamma = 1
	var d1, d2 float64
	for _, a := range outs {
		for _, b := range outs {
			batch := []*trajectory.Trajectory{a.build(), b.build()}
			if err := TurnRLOO(batch, nil, opt); err != nil {
				t.Fatal(err)
			}
			first := batch[0]
			d1 += a.p * b.p * a.g1 * float64(first.Advantages[1])
			if len(first.Tokens) > 3 {
				d2 += a.p * b.p * a.g2 * float64(first.Advantages[3])
			}
		}
	}
	if math.Abs(d1-0.12) > 1e-6 || math.Abs(d2-0.126) > 1e-6 {
		t.Fatalf("expected estimator gradient (%.9g, %.9g), want the true (0.12, 0.126)", d1, d2)
	}
}
