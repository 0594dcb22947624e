package torch

import (
	"math"
	"testing"
)

// Two AdamW steps against the update rule written out by hand
// (Loshchilov & Hutter, Algorithm 2), with gradients from a known loss.
func TestAdamWMatchesHandWrittenRule(t *testing.T) {
	w0 := []float64{0.5, -1.0, 2.0}
	p, err := FromFloat64(w0, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	p.SetRequiresGrad(true)
	groups := []AdamWGroup{{LR: 0.1, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.05}}
	opt, err := NewAdamW([]*Tensor{p}, nil, groups)
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Free()
	// Reference state.
	w := append([]float64(nil), w0...)
	m := make([]float64, 3)
	v := make([]float64, 3)
	c := []float64{1, 2, 3}
	for step := 1; step <= 2; step++ {
		// loss = sum_i c_i * w_i^2  ->  grad_i = 2 c_i w_i
		s := NewScope()
		loss := s.Sum(s.Mul(s.Adopt(FromFloat64(c, 3)), s.PowScalar(p, 2)))
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if err := opt.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		g := groups[0]
		for i := range w {
			grad := 2 * c[i] * w[i]
			w[i] *= 1 - g.LR*g.WeightDecay
			m[i] = g.Beta1*m[i] + (1-g.Beta1)*grad
			v[i] = g.Beta2*v[i] + (1-g.Beta2)*grad*grad
			mh := m[i] / (1 - math.Pow(g.Beta1, float64(step)))
			vh := v[i] / (1 - math.Pow(g.Beta2, float64(step)))
			w[i] -= g.LR * mh / (math.Sqrt(vh) + g.Eps)
		}
		got, _ := p.Float64s()
		for i := range w {
			if math.Abs(got[i]-w[i]) > 1e-12 {
				t.Fatalf("step %d: w[%d] = %.15f, hand rule %.15f", step, i, got[i], w[i])
			}
		}
	}
	st, err := opt.State(1 - 1)
	if err != nil || st.Step != 2 {
		t.Fatalf("state: %+v %v", st, err)
	}
	mv, _ := st.M.Float64s()
	if math.Abs(mv[2]-m[2]) > 1e-12 {
		t.Fatalf("m state %v want %v", mv, m)
	}
	st.M.Free()
	st.V.Free()
	if err := opt.SetLR(0, 0.01); err != nil {
		t.Fatal(err)
	}
	if err := opt.SetLR(3, 0.01); err == nil {
		t.Fatal("SetLR on a missing group succeeded")
	}
}

// Global-norm clipping: grads (3, 4) have norm 5; clipping to 1 scales them
// by 1/(5+1e-6).
func TestClipGradNorm(t *testing.T) {
	p, _ := FromFloat64([]float64{1.5, 2}, 2)
	defer p.Free()
	p.SetRequiresGrad(true)
	opt, err := NewAdamW([]*Tensor{p}, nil, []AdamWGroup{DefaultAdamW})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Free()
	s := NewScope()
	defer s.Close()
	// loss = sum w^2 -> grad = 2w = (3, 4)
	if err := s.Sum(s.PowScalar(p, 2)).Backward(); err != nil {
		t.Fatal(err)
	}
	n, err := opt.ClipGradNorm(1)
	if err != nil || math.Abs(n-5) > 1e-12 {
		t.Fatalf("norm = %v %v, want 5", n, err)
	}
	g, _ := p.Grad()
	s.Own(g)
	gv, _ := g.Float64s()
	if math.Abs(gv[0]-3/(5+1e-6)) > 1e-12 || math.Abs(gv[1]-4/(5+1e-6)) > 1e-12 {
		t.Fatalf("clipped grads %v", gv)
	}
}

// bf16Param makes a bf16 leaf tensor from vals (rounded to bf16) and
// returns it with the values it holds.
func bf16Param(t *testing.T, vals []float32) (*Tensor, []float64) {
	t.Helper()
	f, err := FromFloat32(vals, int64(len(vals)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Free()
	p, err := f.To(CPU, BFloat16)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetRequiresGrad(true); err != nil {
		t.Fatal(err)
	}
	held, err := p.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return p, held
}

// bf16HalfStep is half the distance between x and the next bf16 number
// away from zero (bf16 keeps 8 significant bits).
func bf16HalfStep(x float64) float64 {
	_, e := math.Frexp(math.Abs(x)) // |x| = f * 2^e, f in [0.5, 1)
	return math.Ldexp(1, e-9)
}

// linearSteps runs n AdamW steps on the loss sum(c * p), whose gradient is
// the constant c (exact in bf16), accumulating over two micro-batches of
// half the loss each.
func linearSteps(t *testing.T, opt *AdamW, p *Tensor, c []float32, n int) {
	t.Helper()
	for range n {
		for range 2 {
			s := NewScope()
			ct := s.To(s.Float32(c, int64(len(c))), CPU, p.DType())
			loss := s.MulScalar(s.Sum(s.Mul(p, ct)), 0.5)
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if err := loss.Backward(); err != nil {
				t.Fatal(err)
			}
			if err := opt.Accumulate(); err != nil {
				t.Fatal(err)
			}
			s.Close()
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		if err := opt.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
	}
}

// A bf16 parameter learns at lr 1e-6 through f32 master weights. With a
// constant gradient g, AdamW's bias-corrected moments are exactly g and
// g^2, so each step (no weight decay) moves a weight by lr g / (|g| + eps),
// lr against the gradient's sign: after N steps the f32 weights are w0 - N
// lr sign(g). A step of 1e-6 is below half a bf16 rounding step near 0.02
// (2^-14 = 6.1e-5), so a bf16 AdamW never moves them; 300 steps move them
// 3e-4, over two rounding steps. The bf16 weights must be that f32 result
// rounded: within half a rounding step of it. The master weights and the
// f32 moments come back in the state, and a new optimizer given that state
// continues exactly where the first stopped.
func TestAdamWTrainsBF16ThroughMasterWeights(t *testing.T) {
	const lr, steps = 1e-6, 300
	p, w0 := bf16Param(t, []float32{0.02, -0.021, 0.0195, 0.0203})
	defer p.Free()
	c := []float32{1, -1, 2, -0.5}
	opt, err := NewAdamW([]*Tensor{p}, nil, []AdamWGroup{{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Free()
	linearSteps(t, opt, p, c, steps)

	want := func(i, n int) float64 { return w0[i] - float64(n)*lr*math.Copysign(1, float64(c[i])) }
	got, err := p.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		w := want(i, steps)
		if got[i] == w0[i] {
			t.Errorf("weight %d did not move from %v (want %v)", i, w0[i], w)
		}
		if math.Abs(got[i]-w) > bf16HalfStep(w)+1e-7 {
			t.Errorf("weight %d = %v, f32 run %v: more than half a bf16 step (%v) apart", i, got[i], w, bf16HalfStep(w))
		}
	}
	st, err := opt.State(0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Free()
	if st.Master == nil || st.Master.DType() != Float32 || st.M.DType() != Float32 {
		t.Fatalf("state of a bf16 parameter: master %v, moments %v; want f32 master weights and moments", st.Master, st.M)
	}
	master, err := st.Master.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	for i := range master {
		if w := want(i, steps); math.Abs(master[i]-w) > 1e-6 {
			t.Errorf("master weight %d = %v, want %v", i, master[i], w)
		}
	}

	// Resume: a fresh bf16 parameter holding the saved (rounded) weights
	// and an optimizer given the saved state.
	q, _ := bf16Param(t, []float32{float32(got[0]), float32(got[1]), float32(got[2]), float32(got[3])})
	defer q.Free()
	resumed, err := NewAdamW([]*Tensor{q}, nil, []AdamWGroup{{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}})
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Free()
	if err := resumed.SetState(0, st); err != nil {
		t.Fatal(err)
	}
	linearSteps(t, opt, p, c, steps)
	linearSteps(t, resumed, q, c, steps)
	a, _ := p.Float64s()
	b, _ := q.Float64s()
	for i := range a {
		if a[i] != b[i] || math.Abs(a[i]-want(i, 2*steps)) > bf16HalfStep(a[i])+1e-7 {
			t.Errorf("weight %d after %d more steps: %v, resumed %v, f32 run %v", i, steps, a[i], b[i], want(i, 2*steps))
		}
	}
}
