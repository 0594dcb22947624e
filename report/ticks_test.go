package report

import (
	"math"
	"testing"
)

// approx reports whether a and b agree to 1e-9 relative (or absolute near 0).
func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestNiceStep(t *testing.T) {
	// The step is the first of 1, 2, 5, 10 times a power of ten that is at
	// least span/n.
	for _, c := range []struct {
		span float64
		n    int
		want float64
	}{
		{1.1, 5, 0.5},        // raw 0.22 -> 0.5
		{10, 5, 2},           // raw 2 -> 2
		{4.16, 8, 1},         // raw 0.52 -> 1
		{3000, 5, 1000},      // raw 600 -> 1000
		{1040, 8, 200},       // raw 130 -> 200
		{0.0004, 4, 0.0001},  // raw 1e-4 -> 1e-4
		{0.00035, 5, 0.0001}, // raw 7e-5 -> 1e-4
	} {
		if got := niceStep(c.span, c.n); !approx(got, c.want) {
			t.Errorf("niceStep(%g, %d) = %g, want %g", c.span, c.n, got, c.want)
		}
	}
}

func TestAxes(t *testing.T) {
	for _, c := range []struct {
		name         string
		a            axis
		lo, hi, step float64
		ticks        []float64
	}{
		// [0, 1] padded by 5% of 1: [-0.05, 1.05]; span 1.1 / 5 = 0.22 -> step 0.5.
		{"values 0..1", valueAxis(0, 1), -0.05, 1.05, 0.5, []float64{0, 0.5, 1}},
		// flat at 2: padded by 10% of 2: [1.8, 2.2]; span 0.4 / 5 = 0.08 -> 0.1.
		{"flat 2", valueAxis(2, 2), 1.8, 2.2, 0.1, []float64{1.8, 1.9, 2, 2.1, 2.2}},
		// flat at 0: padded by 1: [-1, 1]; span 2 / 5 = 0.4 -> 0.5.
		{"flat 0", valueAxis(0, 0), -1, 1, 0.5, []float64{-1, -0.5, 0, 0.5, 1}},
		// iterations 0..4 padded by 2% of 4: [-0.08, 4.08]; 4.16 / 8 = 0.52 -> 1.
		{"iterations 0..4", iterationAxis(0, 4), -0.08, 4.08, 1, []float64{0, 1, 2, 3, 4}},
		// one iteration: one either side; 2 / 8 = 0.25 -> 0.5, but at least 1.
		{"iteration 7", iterationAxis(7, 7), 6, 8, 1, []float64{6, 7, 8}},
		// 0..1000 padded by 20: [-20, 1020]; 1040 / 8 = 130 -> 200.
		{"iterations 0..1000", iterationAxis(0, 1000), -20, 1020, 200, []float64{0, 200, 400, 600, 800, 1000}},
	} {
		a := c.a
		if !approx(a.lo, c.lo) || !approx(a.hi, c.hi) || !approx(a.step, c.step) || len(a.ticks) != len(c.ticks) {
			t.Errorf("%s: axis [%g, %g] step %g ticks %v, want [%g, %g] step %g ticks %v",
				c.name, a.lo, a.hi, a.step, a.ticks, c.lo, c.hi, c.step, c.ticks)
			continue
		}
		for i := range c.ticks {
			if !approx(a.ticks[i], c.ticks[i]) {
				t.Errorf("%s: ticks %v, want %v", c.name, a.ticks, c.ticks)
				break
			}
		}
	}
}

func TestTickLabel(t *testing.T) {
	for _, c := range []struct {
		v, step float64
		want    string
	}{
		{0.5, 0.5, "0.5"},
		{1, 0.5, "1.0"},       // one decimal for the whole axis
		{0.25, 0.05, "0.25"},  // two decimals
		{1e-17, 0.1, "0.0"},   // rounding noise is zero
		{-1e-17, 0.1, "0.0"},  // and never "-0.0"
		{3, 1, "3"},           // integers
		{2500, 500, "2500"},   // below 10000: plain
		{15000, 5000, "15k"},  // thousands
		{14500, 500, "14.5k"}, // half-thousand steps need a decimal
		{12345, 1, "12345"},   // a fine step keeps every digit
		{2e7, 5e6, "20M"},     // millions
		{0.0003, 0.0001, "0.0003"},
		{3e-6, 1e-6, "3.0e-06"},      // tiny steps in exponent form
		{1.000002, 2e-6, "1.000002"}, // unless the values are far from zero
		{0.999996, 2e-6, "0.999996"},
	} {
		if got := tickLabel(c.v, c.step); got != c.want {
			t.Errorf("tickLabel(%g, %g) = %q, want %q", c.v, c.step, got, c.want)
		}
	}
}
