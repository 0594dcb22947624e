package metric

import (
	"math"
	"strings"
	"testing"
)

// The telemetry on a hand-made batch, bound C = 2. Ratios r =
// pi_train/pi_behaviour on the action tokens:
//
//	a: mask 0 1 1,   log r = 0, ln 1.8        -> r = 1, 1.8
//	b: mask 0 1 1 0, log r = -ln 4, ln 1.25   -> r = 0.25, 1.25
//	c: no behaviour logprobs recorded: left out
//
// k3 = r - 1 - ln r: 0; 0.8 - ln 1.8 = 0.212213335; -0.75 + ln 4 =
// 0.636294361; 0.25 - ln 1.25 = 0.026856449. Mean over 4 tokens:
// 0.875364145/4 = 0.218841036. Max ratio 1.8, min 0.25; beyond [1/2, 2]:
// only 0.25, 1 of 4. Largest logprob gap ln 4 = 1.386294361.
func TestMeasureMismatchByHand(t *testing.T) {
	ln := func(x float64) float32 { return float32(math.Log(x)) }
	behaviour := [][]float32{{0, -1, -2}, {0, -0.5, -1, 0}, nil}
	train := [][]float32{{0.7, -1, -2 + ln(1.8)}, {0, -0.5 - ln(4), -1 + ln(1.25), 9}, {0, -1}}
	masks := [][]uint8{{0, 1, 1}, {0, 1, 1, 0}, {0, 1}}
	m := MeasureMismatch(behaviour, train, masks, 2, 20)
	if m.Tokens != 4 {
		t.Fatalf("%d tokens measured, want 4", m.Tokens)
	}
	for _, c := range []struct {
		what      string
		got, want float64
	}{{"kl", m.KL, 0.218841036}, {"ratio max", m.RatioMax, 1.8}, {"ratio min", m.RatioMin, 0.25},
		{"beyond bound", m.BeyondBound, 0.25}, {"max abs diff", m.MaxAbsDiff, 1.386294361}} {
		if math.Abs(c.got-c.want) > 1e-6 {
			t.Errorf("%s = %.9g, want %.9g", c.what, c.got, c.want)
		}
	}
	w := m.Warning(7, 0.1)
	for _, part := range []string{"iteration 7", "0.2188", "exceeds 0.1", "[0.25, 1.8]", "25.00%"} {
		if !strings.Contains(w, part) {
			t.Errorf("warning %q does not say %q", w, part)
		}
	}
	if w := m.Warning(7, 0.5); w != "" {
		t.Errorf("KL below the threshold warned: %q", w)
	}
	if w := m.Warning(7, 0); w != "" {
		t.Errorf("threshold 0 (off) warned: %q", w)
	}
	// Identical engines: nothing to report.
	same := MeasureMismatch(behaviour[:1], behaviour[:1], masks[:1], 2, 20)
	if same.KL != 0 || same.RatioMax != 1 || same.RatioMin != 1 || same.BeyondBound != 0 || same.MaxAbsDiff != 0 {
		t.Errorf("identical logprobs: %+v, want KL 0 and ratios 1", same)
	}
	if none := MeasureMismatch(nil, nil, nil, 2, 20); none.Tokens != 0 || !math.IsNaN(none.KL) {
		t.Errorf("no action token: %+v, want NaN figures", none)
	}
}
