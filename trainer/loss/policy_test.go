package loss

import (
	"math"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
)

// policyCase runs the policy loss cfg names on one micro-batch (all
// [B,T] row-major) and returns the loss, the clip counts and the gradient
// of the loss with respect to logp.
type policyCase struct {
	B, T                      int64
	logp, old, adv, mask, wts []float32 // wts nil: no rollout correction
	cfg                       algo.LossConfig
	n                         algo.Norm
}

func (c policyCase) run(t *testing.T) (loss, low, high float64, grad []float32) {
	t.Helper()
	s := torch.NewScope()
	defer s.Close()
	lp := s.Float32(c.logp, c.B, c.T)
	if err := lp.SetRequiresGrad(true); err != nil {
		t.Fatal(err)
	}
	in := PolicyInputs{LogP: lp, OldLogP: s.Float32(c.old, c.B, c.T), Adv: s.Float32(c.adv, c.B, c.T), Mask: s.Float32(c.mask, c.B, c.T)}
	if c.wts != nil {
		in.Weight = s.Float32(c.wts, c.B, c.T)
	}
	p, err := PolicyLoss(s, in, c.cfg, c.n)
	if err != nil {
		t.Fatal(err)
	}
	loss, low, high = item(t, s, p.Loss), item(t, s, p.ClipLow), item(t, s, p.ClipHigh)
	if err := p.Loss.Backward(); err != nil {
		t.Fatal(err)
	}
	g := s.Adopt(lp.Grad())
	if grad, err = g.Float32s(); err != nil {
		t.Fatal(err)
	}
	return loss, low, high, grad
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

func checkPolicy(t *testing.T, name string, c policyCase, loss, low, high float64, grad []float64) {
	t.Helper()
	gl, glow, ghigh, gg := c.run(t)
	if !near(gl, loss) || glow != low || ghigh != high {
		t.Errorf("%s: loss %.9g, clipped low %v high %v; want %.9g, %v, %v", name, gl, glow, ghigh, loss, low, high)
	}
	for i := range grad {
		if !near(float64(gg[i]), grad[i]) {
			t.Errorf("%s: d loss / d logp[%d] = %.9g, want %.9g (all %v)", name, i, gg[i], grad[i], gg)
		}
	}
}

// The names trainer/config validates are exactly the registered losses.
func TestPolicyLossRegistry(t *testing.T) {
	if got, want := PolicyLossNames(), slices.Sorted(slices.Values(algo.PolicyLosses)); !slices.Equal(got, want) {
		t.Fatalf("registered policy losses %v, algo.PolicyLosses %v", got, want)
	}
	if _, err := PolicyLossNamed("trpo"); err == nil {
		t.Fatal("an unknown policy loss was accepted")
	}
}

// ppo on four tokens worked out by hand, eps_low 0.2, eps_high 0.28:
//
//	token  logp-old  r     A     -A r   -A clip(r)       max     clipped  d max / d logp = -A r unless clipped
//	0      ln 1.5    1.5   1     -1.5   -1.28            -1.28   high     0
//	1      ln 0.5    0.5  -2      1.0    1.6 (clip .8)    1.6    low      0
//	2      0         1     0.5   -0.5   -0.5             -0.5    -        -0.5
//	3      ln 2      2     3     (masked out: clipped high, but not counted)
//
// token-mean over the 3 masked tokens: (-1.28 + 1.6 - 0.5)/3 = -0.06, and
// the gradient is the last column over 3: token 2 gets -0.5/3.
// Dual clip: a token with A = -1 and r = 4: -A r = 4, -A clip(r) = 1.28,
// max = 4, dual bound -A c = 3 for c = 3 -> 3, with gradient 0 (a
// constant); it is not a clip bit (r is above 1+eps with A < 0).
func TestPPOByHand(t *testing.T) {
	ln := func(x float64) float32 { return float32(math.Log(x)) }
	cfg := algo.LossConfig{PolicyLoss: "ppo", ClipLow: 0.2, ClipHigh: 0.28, LossAgg: "token-mean"}
	c := policyCase{B: 1, T: 4, logp: []float32{ln(1.5), ln(0.5), 0, ln(2)}, old: make([]float32, 4),
		adv: []float32{1, -2, 0.5, 3}, mask: []float32{1, 1, 1, 0}, cfg: cfg, n: algo.Norm{Tokens: 3, Sequences: 1}}
	checkPolicy(t, "ppo", c, -0.06, 1, 1, []float64{0, 0, -0.5 / 3, 0})
	cfg.DualClip = 3
	checkPolicy(t, "ppo dual clip", policyCase{B: 1, T: 1, logp: []float32{ln(4)}, old: []float32{0}, adv: []float32{-1},
		mask: []float32{1}, cfg: cfg, n: algo.Norm{Tokens: 1, Sequences: 1}}, 3, 0, 0, []float64{0})
}

// gspo on two sequences, eps_low 0.2, eps_high 0.28:
//
//	seq 0: mask 1 1 1, logp-old 0.3 -0.1 0.1: mean 0.1, s_0 = e^0.1 = 1.105170918, A = 2:
//	       inside [0.8, 1.28], so L_t = -2 s_0 = -2.210341836 on each of the 3 tokens
//	seq 1: mask 1 1 0, logp-old -0.6 -0.4 (padding 5 ignored): mean -0.5,
//	       s_1 = e^-0.5 = 0.606530660, A = -1: -A s = 0.6065, -A clip(s) = 0.8: max 0.8,
//	       clipped low on both tokens, gradient 0
//
// token-mean over the 5 loss tokens: (3(-2.210341836) + 2(0.8))/5 = -1.006205102.
// Gradient of GSPO-token: s_{i,t} has value s_i and d s_{i,t}/d logp_t = s_i,
// so d/d logp_t of (1/5) sum L = (1/5)(-2)(1.105170918) = -0.442068367 on
// seq 0's tokens. Plain GSPO gives the same: L = (1/5) 3 (-2 s_0) and
// d s_0 / d logp_t = s_0/3, so (1/5)(3)(-2)(s_0/3).
// seq-mean-token-mean: (-2.210341836 + 0.8)/2 = -0.705170918, gradient
// (1/2)(1/3)(-2)(1.105170918) = -0.368390306 on seq 0's tokens.
func TestGSPOByHand(t *testing.T) {
	old := []float32{0, 0, 0, 0, 0, 0}
	c := policyCase{B: 2, T: 3, logp: []float32{0.3, -0.1, 0.1, -0.6, -0.4, 5}, old: old,
		adv: []float32{2, 2, 2, -1, -1, -1}, mask: []float32{1, 1, 1, 1, 1, 0},
		cfg: algo.LossConfig{PolicyLoss: "gspo", ClipLow: 0.2, ClipHigh: 0.28, LossAgg: "token-mean"}, n: algo.Norm{Tokens: 5, Sequences: 2}}
	g := -0.442068367
	checkPolicy(t, "gspo token-mean", c, -1.006205102, 2, 0, []float64{g, g, g, 0, 0, 0})
	c.cfg.LossAgg = "seq-mean-token-mean"
	g = -0.368390306
	checkPolicy(t, "gspo seq-mean-token-mean", c, -0.705170918, 2, 0, []float64{g, g, g, 0, 0, 0})
}

// cispo on four tokens, eps_low 0.2, eps_high 0.28 (weight clipped to [0.8, 1.28]):
//
//	token  logp  old   r                 w = sg[clip r]  A     L = -w A logp        dL/dlogp = -w A
//	0      -1    -1.5  e^0.5 = 1.6487    1.28 (high)     1     -1.28(1)(-1) = 1.28  -1.28
//	1      -2    -1    e^-1 = 0.3679     0.8  (low)     -0.5   -0.8(-0.5)(-2) = -0.8  0.4
//	2      -0.5  -0.5  1                 1               2     -1(2)(-0.5) = 1       -2
//	3      -3     0    (masked out: r = e^-3 is low, but not counted)
//
// token-mean over 3: (1.28 - 0.8 + 1)/3 = 0.493333333, gradient the last
// column over 3. Token 0 is where cispo differs from ppo: ppo clips its
// surrogate (A > 0, r > 1.28) and gives it no gradient at all.
func TestCISPOByHand(t *testing.T) {
	c := policyCase{B: 1, T: 4, logp: []float32{-1, -2, -0.5, -3}, old: []float32{-1.5, -1, -0.5, 0},
		adv: []float32{1, -0.5, 2, 5}, mask: []float32{1, 1, 1, 0},
		cfg: algo.LossConfig{PolicyLoss: "cispo", ClipLow: 0.2, ClipHigh: 0.28, LossAgg: "token-mean"}, n: algo.Norm{Tokens: 3, Sequences: 1}}
	checkPolicy(t, "cispo", c, 1.48/3, 1, 1, []float64{-1.28 / 3, 0.4 / 3, -2.0 / 3, 0})
}

// The rollout correction's weights multiply each token's loss. With every
// weight exactly 1 (identical engines) the loss and its gradient are
// bit-for-bit those without a correction, for each loss. With weights
// (2, 0.5, 0) on ppo's tokens above: (2(-1.28) + 0.5(1.6) + 0(-0.5))/3 =
// -0.586666667, and token 2's gradient is 0 (its weight drops it).
func TestPolicyLossWeights(t *testing.T) {
	ln := func(x float64) float32 { return float32(math.Log(x)) }
	for _, name := range algo.PolicyLosses {
		c := policyCase{B: 1, T: 4, logp: []float32{ln(1.5), ln(0.5), -0.1, ln(2)}, old: []float32{0, 0, 0.05, 0},
			adv: []float32{1, -2, 0.5, 3}, mask: []float32{1, 1, 1, 0},
			cfg: algo.LossConfig{PolicyLoss: name, ClipLow: 0.2, ClipHigh: 0.28, LossAgg: "token-mean"}, n: algo.Norm{Tokens: 3, Sequences: 1}}
		l0, _, _, g0 := c.run(t)
		c.wts = []float32{1, 1, 1, 1}
		l1, _, _, g1 := c.run(t)
		if l0 != l1 || !slices.Equal(g0, g1) {
			t.Errorf("%s: weights 1 changed the loss %v -> %v or the gradient %v -> %v", name, l0, l1, g0, g1)
		}
	}
	c := policyCase{B: 1, T: 4, logp: []float32{ln(1.5), ln(0.5), 0, ln(2)}, old: make([]float32, 4),
		adv: []float32{1, -2, 0.5, 3}, mask: []float32{1, 1, 1, 0}, wts: []float32{2, 0.5, 0, 1},
		cfg: algo.LossConfig{PolicyLoss: "ppo", ClipLow: 0.2, ClipHigh: 0.28, LossAgg: "token-mean"}, n: algo.Norm{Tokens: 3, Sequences: 1}}
	checkPolicy(t, "ppo weighted", c, -1.76/3, 1, 1, []float64{0, 0, 0, 0})
}
