package algo

import (
	"math"
	"testing"
)

// Hand values, with d = lpRef - lp:
//
//	lp -1, lpRef -2 (d = -1): k1 = 1,  k2 = 0.5, k3 = e^-1 + 1 - 1 = 0.36787944117
//	lp -2, lpRef -1 (d = 1):  k1 = -1, k2 = 0.5, k3 = e - 1 - 1    = 0.71828182846
//	lp = lpRef:               all 0
//	lp -0.5, lpRef -1.5 (d = -1): k2 = 0.5 * 1^2 = 0.5; lp -1, lpRef -3: k2 = 0.5*4 = 2
func TestKLEstimators(t *testing.T) {
	cases := []struct {
		name          string
		lp, lpRef, kl float64
	}{
		{"k1", -1, -2, 1}, {"k2", -1, -2, 0.5}, {"k3", -1, -2, 0.36787944117},
		{"k1", -2, -1, -1}, {"k2", -2, -1, 0.5}, {"k3", -2, -1, 0.71828182846},
		{"k1", -0.7, -0.7, 0}, {"k2", -0.7, -0.7, 0}, {"k3", -0.7, -0.7, 0},
		{"k2", -1, -3, 2},
	}
	for _, c := range cases {
		f, err := KLEstimator(c.name)
		if err != nil {
			t.Fatal(err)
		}
		if got := f(c.lp, c.lpRef); math.Abs(got-c.kl) > 1e-10 {
			t.Errorf("%s(%v, %v) = %v, want %v", c.name, c.lp, c.lpRef, got, c.kl)
		}
	}
	if _, err := KLEstimator("k4"); err == nil {
		t.Error("k4 accepted")
	}
}

func TestTokenKL(t *testing.T) {
	k1, _ := KLEstimator("k1")
	got, err := TokenKL(k1, []float32{-1, -1, -0.5}, []float32{-3, -2, -1}, []uint8{0, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	assertSlice(t, "token kl", got, []float64{0, 1, 0.5}) // prompt token masked
	if _, err := TokenKL(k1, []float32{-1}, []float32{-1, -2}, []uint8{1, 1}); err == nil {
		t.Error("length mismatch accepted")
	}
}
