package metric

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// Selected values 1, 2, 3 (the masked 100 and the nil row ignored): mean
// 2, population variance (1 + 0 + 1)/3, min 1, max 3.
func TestMaskedStats(t *testing.T) {
	s := MaskedStats([][]float32{{1, 2, 3, 100}, nil}, [][]uint8{{1, 1, 1, 0}, {1, 1}})
	if s.N != 3 || !near(s.Mean, 2) || !near(s.Std, math.Sqrt(2.0/3)) || s.Min != 1 || s.Max != 3 {
		t.Errorf("stats %+v, want N 3 mean 2 std sqrt(2/3) min 1 max 3", s)
	}
	if e := MaskedStats(nil, nil); e.N != 0 || !math.IsNaN(e.Mean) || !math.IsNaN(e.Max) {
		t.Errorf("empty stats %+v, want N 0 and NaN", e)
	}
}

// The two-turn action tokens 2, 3, 6, 7 carry advantages 1, -1, 3, 5
// (the tool tokens' 100 is ignored): mean 2, squares 1+9+1+9 = 20, std
// sqrt(5).
func TestAdvantageAndReturnStats(t *testing.T) {
	tr := &trajectory.Trajectory{Mask: []uint8{0, 0, 1, 1, 0, 0, 1, 1}} // the two-turn trajectory of algo's golden tests
	tr.Advantages = []float32{0, 0, 1, -1, 100, 100, 3, 5}
	tr.Returns = []float32{0, 0, 2, 2, 100, 100, 2, 2}
	a := AdvantageStats([]*trajectory.Trajectory{tr})
	if a.N != 4 || !near(a.Mean, 2) || !near(a.Std, math.Sqrt(5)) || a.Min != -1 || a.Max != 5 {
		t.Errorf("advantage stats %+v", a)
	}
	r := ReturnStats([]*trajectory.Trajectory{tr})
	if r.N != 4 || r.Mean != 2 || r.Std != 0 {
		t.Errorf("return stats %+v", r)
	}
}

// Returns 1, 2, 3 on the action tokens (population variance 2/3).
//
//	values = returns:   Var[R-V] = 0            -> 1
//	values 1.5, 2, 2.5: R-V = -0.5, 0, 0.5, Var = 1/6 -> 1 - (1/6)/(2/3) = 0.75
//	values 2, 2, 2:     R-V = -1, 0, 1, Var = 2/3     -> 0
//	constant returns:   Var[R] = 0              -> NaN
func TestExplainedVariance(t *testing.T) {
	build := func(ret, val [3]float32) *trajectory.Trajectory {
		tr := &trajectory.Trajectory{Mask: []uint8{0, 1, 1, 1}} // a prompt token, three action tokens
		tr.Returns = []float32{9, ret[0], ret[1], ret[2]}       // the prompt's 9 is ignored
		tr.Values = []float32{-9, val[0], val[1], val[2]}
		return tr
	}
	cases := []struct {
		ret, val [3]float32
		want     float64
	}{
		{[3]float32{1, 2, 3}, [3]float32{1, 2, 3}, 1},
		{[3]float32{1, 2, 3}, [3]float32{1.5, 2, 2.5}, 0.75},
		{[3]float32{1, 2, 3}, [3]float32{2, 2, 2}, 0},
	}
	for _, c := range cases {
		noValues := &trajectory.Trajectory{Mask: []uint8{0, 1, 1}} // skipped: no values
		if got := ExplainedVarianceOf([]*trajectory.Trajectory{build(c.ret, c.val), noValues}); !near(got, c.want) {
			t.Errorf("returns %v values %v: explained variance %v, want %v", c.ret, c.val, got, c.want)
		}
	}
	if got := ExplainedVarianceOf([]*trajectory.Trajectory{build([3]float32{2, 2, 2}, [3]float32{1, 2, 3})}); !math.IsNaN(got) {
		t.Errorf("constant returns: %v, want NaN", got)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*max(1, math.Abs(b)) }
