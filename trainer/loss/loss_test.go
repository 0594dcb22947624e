package loss

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trajectory"
)

func item(t *testing.T, s *torch.Scope, x *torch.Tensor) float64 {
	t.Helper()
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	v, err := x.Item()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Aggregations on x = [[1,2,3],[4,0,0]] with mask [[1,1,1],[1,0,0]]:
// token-mean = 10/4; seq-mean-token-sum = (6+4)/2 = 5;
// seq-mean-token-mean = (2 + 4)/2 = 3; seq-mean-token-sum-norm with a
// horizon of 8: (6+4)/(2*8) = 0.625.
func TestAggregations(t *testing.T) {
	s := torch.NewScope()
	defer s.Close()
	x := s.Float32([]float32{1, 2, 3, 4, 0, 0}, 2, 3)
	m := s.Float32([]float32{1, 1, 1, 1, 0, 0}, 2, 3)
	n := algo.Norm{Tokens: 4, Sequences: 2, Horizon: 8}
	for agg, want := range map[string]float64{"token-mean": 2.5, "seq-mean-token-sum": 5, "seq-mean-token-mean": 3,
		"seq-mean-token-sum-norm": 0.625} {
		if got := item(t, s, Aggregate(s, x, m, agg, n)); math.Abs(got-want) > 1e-6 {
			t.Fatalf("%s = %v, want %v", agg, got, want)
		}
	}
}

// KL estimators as loss terms at logp = 0, ref = -1 (d = ref - logp = -1):
// k1 = 1, k2 = 0.5, k3 = e^-1 - (-1) - 1 = e^-1.
func TestKLLossByHand(t *testing.T) {
	s := torch.NewScope()
	defer s.Close()
	lp, ref, m := s.Float32([]float32{0}, 1, 1), s.Float32([]float32{-1}, 1, 1), s.Float32([]float32{1}, 1, 1)
	for est, want := range map[string]float64{"k1": 1, "k2": 0.5, "k3": math.Exp(-1)} {
		if got := item(t, s, KLLoss(s, lp, ref, m, est, "token-mean", algo.Norm{Tokens: 1, Sequences: 1})); math.Abs(got-want) > 1e-6 {
			t.Fatalf("%s = %v want %v", est, got, want)
		}
	}
}

// Clipped value loss: v = 2, oldV = 1, R = 0, clip 0.5: unclipped
// (2-0)^2 = 4, clipped v = 1.5 -> 2.25; 0.5*max = 2.
func TestValueLossByHand(t *testing.T) {
	s := torch.NewScope()
	defer s.Close()
	one := s.Float32([]float32{1}, 1, 1)
	got := item(t, s, ValueLoss(s, s.Float32([]float32{2}, 1, 1), one, s.Float32([]float32{0}, 1, 1), one, 0.5, "token-mean", algo.Norm{Tokens: 1, Sequences: 1}))
	if math.Abs(got-2) > 1e-6 {
		t.Fatalf("value loss %v want 2", got)
	}
}

// The mask gradient tests. A two-turn trajectory: prompt (2 tokens), turn
// 1 (2 action tokens), an observation (2 tokens, mask 0), turn 2 (2 action
// tokens). With loss_mask on, the observation tokens' logprobs get zero
// gradient and perturbing them changes no gradient; with it off they get
// gradient. With advantage_mask on they receive advantage 0, so even a
// loss over all tokens gives them no gradient; with it off they do.
func TestMaskGradients(t *testing.T) {
	mk := func(reward float64) *trajectory.Trajectory {
		return &trajectory.Trajectory{Group: 0, Outcome: reward, Reward: reward,
			Tokens:    []int32{1, 2, 3, 4, 5, 6, 7, 8},
			Mask:      []uint8{0, 0, 1, 1, 0, 0, 1, 1},
			TurnOf:    []int16{-1, -1, 0, 0, 0, 0, 1, 1},
			Turns:     []trajectory.Turn{{}, {}},
			PromptLen: 2}
	}
	obs := []int{4, 5} // observation token positions
	grad := func(advMask, lossMask bool, perturb float32) []float32 {
		batch := []*trajectory.Trajectory{mk(1), mk(0)}
		opt := algo.DefaultOptions()
		opt.AdvantageMask = advMask
		if err := algo.GRPO(batch, nil, opt); err != nil {
			t.Fatal(err)
		}
		tr := batch[0]
		lpv := []float32{-1, -1, -0.5, -0.7, -2, -2, -0.3, -0.9}
		for _, i := range obs {
			lpv[i] += perturb
		}
		oldv := []float32{-1, -1, -0.6, -0.6, -2.1, -1.9, -0.4, -0.8}
		mask := make([]float32, 8)
		for i := 2; i < 8; i++ {
			if !lossMask || tr.Mask[i] == 1 {
				mask[i] = 1
			}
		}
		s := torch.NewScope()
		defer s.Close()
		lp := s.Float32(lpv, 1, 8)
		lp.SetRequiresGrad(true)
		pg, err := PolicyLoss(s, PolicyInputs{LogP: lp, OldLogP: s.Float32(oldv, 1, 8), Adv: s.Float32(tr.Advantages, 1, 8), Mask: s.Float32(mask, 1, 8)},
			algo.LossConfig{PolicyLoss: "ppo", ClipLow: 0.2, ClipHigh: 0.2, LossAgg: "token-mean"}, algo.Norm{Tokens: 4, Sequences: 1})
		if err != nil {
			t.Fatal(err)
		}
		loss := pg.Loss
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		g := s.Adopt(lp.Grad())
		v, _ := g.Float32s()
		return v
	}
	same := func(a, b []float32) bool {
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	// loss mask on (advantage mask off, so observations do carry advantage)
	g0, g1 := grad(false, true, 0), grad(false, true, 0.05)
	if g0[4] != 0 || g0[5] != 0 || !same(g0, g1) {
		t.Fatalf("loss_mask on: observation gradients %v / perturbed %v", g0, g1)
	}
	// loss mask off: observations get gradient and perturbing them changes it
	g0, g1 = grad(false, false, 0), grad(false, false, 0.05)
	if g0[4] == 0 || same(g0, g1) {
		t.Fatalf("loss_mask off: observation gradients %v / perturbed %v", g0, g1)
	}
	// advantage mask on, loss over all tokens: observation advantage 0 -> no gradient
	g0, g1 = grad(true, false, 0), grad(true, false, 0.05)
	if g0[4] != 0 || g0[5] != 0 || !same(g0, g1) {
		t.Fatalf("advantage_mask on: observation gradients %v / perturbed %v", g0, g1)
	}
	// action tokens are credited either way
	if g0[2] == 0 || g0[6] == 0 {
		t.Fatalf("action tokens got no gradient: %v", g0)
	}
}

// Extreme log-ratios stay finite, as verl bounds them. A token whose
// probability rose by e^100 has its log-ratio clamped to 20: with A = -1
// its PPO loss is max(e^20, clip) = e^20 (finite, and its gradient too);
// k3 at ref - logp = 100 is clamped to 10. A padding position (mask 0)
// holding inf or NaN is left out of the sums and of the gradient.
func TestLossesBoundedAndPaddingSafe(t *testing.T) {
	s := torch.NewScope()
	defer s.Close()
	cfg := algo.LossConfig{PolicyLoss: "ppo", ClipLow: 0.2, ClipHigh: 0.28, LossAgg: "token-mean", KLEstimator: "k3"}
	logp := s.Float32([]float32{100, 0, float32(math.Inf(1))}, 1, 3)
	if err := logp.SetRequiresGrad(true); err != nil {
		t.Fatal(err)
	}
	zero := s.Float32([]float32{0, 0, 0}, 1, 3)
	adv := s.Float32([]float32{-1, 1, float32(math.NaN())}, 1, 3)
	mask := s.Float32([]float32{1, 1, 0}, 1, 3)
	n := algo.Norm{Tokens: 2, Sequences: 1}
	pg, err := PolicyLoss(s, PolicyInputs{LogP: logp, OldLogP: zero, Adv: adv, Mask: mask}, cfg, n)
	if err != nil {
		t.Fatal(err)
	}
	pl := pg.Loss
	// token 0: e^20 (A = -1, ratio e^20: the unclipped term is the max);
	// token 1: -1 (ratio 1). Mean over 2 tokens.
	want := (math.Exp(20) - 1) / 2
	if got := item(t, s, pl); math.Abs(got-want) > 1e-6*want {
		t.Errorf("policy loss %v, want %v", got, want)
	}
	kl := KLLoss(s, zero, s.Float32([]float32{-100, 0, 0}, 1, 3), mask, "k3", "token-mean", n)
	// token 0: ref - logp = -100 -> clamped to -20: e^-20 + 20 - 1 -> clamped to 10; token 1: 0.
	if got := item(t, s, kl); math.Abs(got-5) > 1e-6 {
		t.Errorf("k3 loss %v, want (10 + 0)/2 = 5", got)
	}
	if err := s.Add(pl, kl).Backward(); err != nil {
		t.Fatal(err)
	}
	g, err := logp.Grad()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Free()
	gv, err := g.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range gv {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Errorf("gradient[%d] = %v, want finite (all %v)", i, v, gv)
		}
	}
	if gv[2] != 0 {
		t.Errorf("gradient at the padding position %v, want 0", gv[2])
	}
}

// Diagnose on four tokens, r = 0.5, 2, 1 and a fourth token masked out.
// Approximate KL = sum of (r-1) - log r = (-0.5 + ln 2) + (1 - ln 2) + 0 =
// 0.5; entropy = 0.1 + 0.2 + 0.3.
func TestDiagnoseByHand(t *testing.T) {
	s := torch.NewScope()
	defer s.Close()
	logp := s.Float32([]float32{float32(math.Log(0.5)), float32(math.Log(2)), 0, 5}, 1, 4)
	zeros := s.Float32([]float32{0, 0, 0, 0}, 1, 4)
	ent := s.Float32([]float32{0.1, 0.2, 0.3, 9}, 1, 4)
	mask := s.Float32([]float32{1, 1, 1, 0}, 1, 4)
	d := Diagnose(s, logp, zeros, ent, mask)
	for _, c := range []struct {
		name string
		x    *torch.Tensor
		want float64
	}{{"approx kl", d.ApproxKL, 0.5}, {"entropy", d.Entropy, 0.6}, {"tokens", d.Tokens, 3}} {
		if got := item(t, s, c.x); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
}

// TokenKL by hand, with d = ref - logp:
//
//	logp -1, ref -2 (d = -1): k1 = 1,  k2 = 0.5, k3 = e^-1 + 1 - 1 = 0.36787944117
//	logp -2, ref -1 (d = 1):  k1 = -1, k2 = 0.5, k3 = e - 1 - 1    = 0.71828182846
//	logp = ref:               all 0
//	logp -1, ref -3 (d = -2): k2 = 0.5 * 2^2 = 2, k3 = e^-2 + 2 - 1 = 1.13533528324
//	logp -30, ref 0 (d = 30): k3 clamps d to 20, then k3 to 10
func TestTokenKLByHand(t *testing.T) {
	s := torch.NewScope()
	defer s.Close()
	logp := s.Float32([]float32{-1, -2, -0.7, -1, -30}, 5)
	ref := s.Float32([]float32{-2, -1, -0.7, -3, 0}, 5)
	want := map[string][]float64{
		"k1": {1, -1, 0, 2, -30},
		"k2": {0.5, 0.5, 0, 2, 450},
		"k3": {0.36787944117, 0.71828182846, 0, 1.13533528324, 10},
	}
	for est, w := range want {
		got, err := TokenKL(s, logp, ref, est).Float64s()
		if err != nil {
			t.Fatal(err)
		}
		for i := range w {
			if math.Abs(got[i]-w[i]) > 1e-5*math.Max(1, math.Abs(w[i])) {
				t.Errorf("%s token %d: %v, want %v", est, i, got[i], w[i])
			}
		}
	}
}
