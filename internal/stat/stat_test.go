package stat

import (
	"math"
	"testing"
)

// 1, 2, 3, 4: mean 2.5, squared deviations 2.25+0.25+0.25+2.25 = 5, so the
// population variance is 5/4 and the sample variance 5/3.
func TestMeanVarDdof(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	for _, tc := range []struct {
		ddof int
		want float64
	}{{0, 1.25}, {1, 5.0 / 3}} {
		m, v := MeanVar(xs, tc.ddof)
		if m != 2.5 || math.Abs(v-tc.want) > 1e-15 {
			t.Errorf("ddof %d: mean %v, variance %v; want 2.5, %v", tc.ddof, m, v, tc.want)
		}
	}
	if _, s := MeanStd(xs, 1); math.Abs(s-math.Sqrt(5.0/3)) > 1e-15 {
		t.Errorf("std %v, want sqrt(5/3)", s)
	}
	if m, v := MeanVar([]float64{7}, 1); m != 7 || v != 0 {
		t.Errorf("one sample, ddof 1: %v, %v; want 7, 0", m, v)
	}
	if m, v := MeanVar(nil, 0); !math.IsNaN(m) || v != 0 {
		t.Errorf("no samples: %v, %v; want NaN, 0", m, v)
	}
}
