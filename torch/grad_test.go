package torch

import (
	"math"
	"testing"
)

// ppoObjective is the clipped surrogate written out in plain Go:
// L = -1/n sum_i min(r_i A_i, clip(r_i, 1-e, 1+e) A_i), r_i = exp(lp_i - old_i).
func ppoObjective(lp, old, adv []float64, eps float64) float64 {
	var sum float64
	for i := range lp {
		r := math.Exp(lp[i] - old[i])
		c := math.Min(math.Max(r, 1-eps), 1+eps)
		sum += math.Min(r*adv[i], c*adv[i])
	}
	return -sum / float64(len(lp))
}

// The autograd gradient of the clipped objective against central finite
// differences of the plain-Go formula above.
func TestClippedObjectiveGradientMatchesFiniteDifferences(t *testing.T) {
	// Points chosen away from the clip kinks: ratios 1.105, 0.741 (below
	// 1-eps with A<0: the clipped branch), 1.051, 0.905.
	lp := []float64{0.1, -0.3, 0.05, -0.1}
	old := []float64{0, 0, 0, 0}
	adv := []float64{1.5, -0.7, 0.4, 2}
	const eps = 0.2
	s := NewScope()
	defer s.Close()
	x := s.Adopt(FromFloat64(lp, 4))
	if err := x.SetRequiresGrad(true); err != nil {
		t.Fatal(err)
	}
	oldT := s.Adopt(FromFloat64(old, 4))
	advT := s.Adopt(FromFloat64(adv, 4))
	r := s.Exp(s.Sub(x, oldT))
	loss := s.Neg(s.Mean(s.Minimum(s.Mul(r, advT), s.Mul(s.Clamp(r, 1-eps, 1+eps), advT))))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	lv, _ := loss.Item()
	if want := ppoObjective(lp, old, adv, eps); math.Abs(lv-want) > 1e-12 {
		t.Fatalf("loss %v, plain Go %v", lv, want)
	}
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	g, err := x.Grad()
	if err != nil || g == nil {
		t.Fatalf("no grad: %v", err)
	}
	s.Own(g)
	gv, _ := g.Float64s()
	const h = 1e-6
	for i := range lp {
		up := append([]float64(nil), lp...)
		dn := append([]float64(nil), lp...)
		up[i] += h
		dn[i] -= h
		fd := (ppoObjective(up, old, adv, eps) - ppoObjective(dn, old, adv, eps)) / (2 * h)
		if math.Abs(gv[i]-fd) > 1e-7 {
			t.Fatalf("grad[%d] = %v, finite difference %v", i, gv[i], fd)
		}
	}
	// By hand: element 0 has r = e^0.1 = 1.105 inside [0.8, 1.2], so the
	// unclipped branch is taken: d/dlp (-r*A/n) = -1.105*1.5/4. Element 1 has
	// r = e^-0.3 = 0.741 < 0.8 and A = -0.7: rA = -0.519, 0.8A = -0.56, so
	// the minimum is the clipped branch, whose gradient is 0.
	if math.Abs(gv[0]+math.Exp(0.1)*1.5/4) > 1e-9 || gv[1] != 0 {
		t.Fatalf("hand-derived gradients: got %v", gv)
	}
}

// Gradients through log_softmax + gather (the logprob of chosen tokens)
// against finite differences: d/dz_j sum_i log softmax(z_i)[k_i] = [j==k] - p_j.
func TestLogSoftmaxGatherGradient(t *testing.T) {
	z := []float64{0.2, -1, 0.5, 1.5, 0, -0.3}
	s := NewScope()
	defer s.Close()
	x := s.Adopt(FromFloat64(z, 2, 3))
	x.SetRequiresGrad(true)
	idx := s.Int64([]int64{2, 0}, 2, 1)
	obj := s.Sum(s.Gather(s.LogSoftmax(x, -1), -1, idx))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if err := obj.Backward(); err != nil {
		t.Fatal(err)
	}
	g, _ := x.Grad()
	s.Own(g)
	gv, _ := g.Float64s()
	for row, k := range []int{2, 0} {
		zr := z[row*3 : row*3+3]
		var den float64
		for _, v := range zr {
			den += math.Exp(v)
		}
		for j := 0; j < 3; j++ {
			want := -math.Exp(zr[j]) / den
			if j == k {
				want++
			}
			if math.Abs(gv[row*3+j]-want) > 1e-12 {
				t.Fatalf("grad[%d,%d] = %v want %v", row, j, gv[row*3+j], want)
			}
		}
	}
	if err := x.ZeroGrad(); err != nil {
		t.Fatal(err)
	}
	if g2, _ := x.Grad(); g2 != nil {
		t.Fatal("ZeroGrad left a gradient")
	}
}
