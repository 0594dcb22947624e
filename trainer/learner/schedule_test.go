package learner

import (
	"math"
	"testing"
)

// The schedule at hand-worked points: base 1e-3, 2 warm-up steps, 10
// steps in all, min ratio 0.1. Warm-up: steps 0 and 1 at 1/2 and 2/2 of
// base. After it frac = (step-2)/8: cosine at step 6 (frac 1/2) is
// 0.1 + 0.9*0.5*(1+cos(pi/2)) = 0.55 of base, linear at step 4 (frac
// 1/4) 1 - 0.9/4 = 0.775; both hold 0.1 past step 10; constant stays at
// base.
func TestScheduleAt(t *testing.T) {
	const base = 1e-3
	cases := []struct {
		shape string
		step  int
		want  float64
	}{
		{"cosine", 0, 0.5e-3}, {"cosine", 1, 1e-3}, {"cosine", 2, 1e-3}, {"cosine", 6, 0.55e-3}, {"cosine", 10, 0.1e-3}, {"cosine", 50, 0.1e-3},
		{"linear", 0, 0.5e-3}, {"linear", 4, 0.775e-3}, {"linear", 10, 0.1e-3}, {"linear", 99, 0.1e-3},
		{"constant", 0, 0.5e-3}, {"constant", 7, 1e-3}, {"", 7, 1e-3},
	}
	for _, c := range cases {
		s := Schedule{Shape: c.shape, Warmup: 2, Total: 10, MinRatio: 0.1}
		if got := s.At(base, c.step); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("%q at step %d: %v, want %v", c.shape, c.step, got, c.want)
		}
	}
	if got := (Schedule{}).At(base, 3); got != base {
		t.Errorf("the zero schedule gives %v, want the base %v", got, base)
	}
}
