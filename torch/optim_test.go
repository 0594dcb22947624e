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
