package stat

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// Worked by hand: y = [[1 0 1 1] [0 0 1 1]]. Seed means 0.75 and 0.5:
// var (ddof 1) = 2·0.125² = 1/32, over S=2: 1/64. Question means 0.5, 0,
// 1, 1 around 0.625: squares 1/64, 25/64, 9/64, 9/64 sum to 44/64, over
// 3 is 11/48, over Q=4: 11/192. SE² = 3/192 + 11/192 = 7/96.
func TestCrossedIntervalByHand(t *testing.T) {
	iv, err := CrossedInterval([][]float64{{1, 0, 1, 1}, {0, 0, 1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	se := math.Sqrt(7.0 / 96)
	if !near(iv.Mean, 0.625, 1e-12) || !near(iv.Lo, 0.625-1.959963984540054*se, 1e-12) || !near(iv.Hi, 0.625+1.959963984540054*se, 1e-12) {
		t.Errorf("interval %+v, want 0.625 ± 1.96·sqrt(7/96) = [0.0957, 1.1543]", iv)
	}
	// One seed: only the question term. y = 1 1 0 0 0: p = 0.4, the
	// sample variance of 0/1 values is p(1-p)·Q/(Q-1) = 0.24·5/4 = 0.3,
	// over Q = 5: SE² = 0.06.
	iv, err = CrossedInterval([][]float64{{1, 1, 0, 0, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if d := 1.959963984540054 * math.Sqrt(0.06); !near(iv.Mean, 0.4, 1e-12) || !near(iv.Hi-iv.Mean, d, 1e-12) || !near(iv.Mean-iv.Lo, d, 1e-12) {
		t.Errorf("one seed: %+v, want 0.4 ± %.4f", iv, d)
	}
	// Every seed the same and every question the same: no spread at all.
	iv, _ = CrossedInterval([][]float64{{1, 1}, {1, 1}})
	if iv.Lo != 1 || iv.Hi != 1 {
		t.Errorf("constant grid: %+v, want [1, 1]", iv)
	}
}

func TestCrossedIntervalRefusesBadGrids(t *testing.T) {
	for _, y := range [][][]float64{nil, {{}}, {{1, 0}, {1}}} {
		if _, err := CrossedInterval(y); err == nil {
			t.Errorf("grid %v accepted", y)
		}
	}
}

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		iv   Interval
		want string
	}{{Interval{0.1, 0.01, 0.2}, "holds"}, {Interval{-0.1, -0.2, -0.01}, "fails"}, {Interval{0, -0.1, 0.1}, "undecided"},
		{Interval{0.05, 0, 0.1}, "undecided"}} {
		if got := c.iv.Verdict(); got != c.want {
			t.Errorf("%+v: %s, want %s", c.iv, got, c.want)
		}
	}
}

// Worked by hand, each seed with its own questions: y = [[1 0 1 1] [0 1]].
// Seed means 0.75 and 0.5, mean 0.625; var (ddof 1) = 2·0.125² = 1/32,
// over S=2: 1/64. Within: {1 0 1 1} has sample variance 0.75/3 = 1/4,
// over Q=4: 1/16; {0 1} has 0.5/1 = 1/2, over Q=2: 1/4; their sum 5/16
// over S²=4 is 5/64. SE² = 1/64 + 5/64 = 3/32.
func TestNestedIntervalByHand(t *testing.T) {
	iv, err := NestedInterval([][]float64{{1, 0, 1, 1}, {0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	d := 1.959963984540054 * math.Sqrt(3.0/32)
	if !near(iv.Mean, 0.625, 1e-12) || !near(iv.Lo, 0.625-d, 1e-12) || !near(iv.Hi, 0.625+d, 1e-12) {
		t.Errorf("interval %+v, want 0.625 ± 1.96·sqrt(3/32)", iv)
	}
	// The mean is over seeds, not over the pooled questions: [[1 1 1 1]
	// [0]] is 0.5, not 0.8.
	if iv, _ := NestedInterval([][]float64{{1, 1, 1, 1}, {0}}); !near(iv.Mean, 0.5, 1e-12) {
		t.Errorf("mean %v, want 0.5 (the mean of the seed means)", iv.Mean)
	}
	// One seed: the question term alone, CrossedInterval's.
	one, _ := NestedInterval([][]float64{{1, 1, 0, 0, 0}})
	crossed, _ := CrossedInterval([][]float64{{1, 1, 0, 0, 0}})
	if !near(one.Lo, crossed.Lo, 1e-12) || !near(one.Hi, crossed.Hi, 1e-12) {
		t.Errorf("one seed: %+v, CrossedInterval gives %+v", one, crossed)
	}
	for _, y := range [][][]float64{nil, {{}}, {{1, 0}, {}}} {
		if _, err := NestedInterval(y); err == nil {
			t.Errorf("grid %v accepted", y)
		}
	}
}
