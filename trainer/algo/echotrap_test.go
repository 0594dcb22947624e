package algo

import (
	"math"
	"testing"
)

func signals(ws []Warning) []string {
	var s []string
	for _, w := range ws {
		s = append(s, w.Signal)
	}
	return s
}

func newTrap(t *testing.T, cfg EchoTrapConfig) *EchoTrap {
	t.Helper()
	e, err := NewEchoTrap(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// Reward std 0.4, 0.5, 0.06, NaN, 0.04: the peak is 0.5, the threshold
// 0.1*0.5 = 0.05, so only 0.04 warns; NaN is skipped.
func TestEchoTrapRewardStdCollapse(t *testing.T) {
	e := newTrap(t, DefaultEchoTrapConfig())
	var got []Warning
	for i, s := range []float64{0.4, 0.5, 0.06, math.NaN(), 0.04} {
		got = append(got, e.Observe(IterMetrics{Iteration: i, RewardStd: s, Entropy: math.NaN(), GradNorm: 1})...)
	}
	if len(got) != 1 || got[0].Signal != SignalRewardStdCollapse || got[0].Iteration != 4 ||
		got[0].Value != 0.04 || got[0].Reference != 0.5 {
		t.Errorf("warnings %v, want one reward-std collapse at iteration 4 against peak 0.5", got)
	}
}

// Entropy 1.0, 0.8, 0.11, 0.09: threshold 0.1*1.0, only 0.09 warns.
func TestEchoTrapEntropyCollapse(t *testing.T) {
	e := newTrap(t, DefaultEchoTrapConfig())
	for i, h := range []float64{1.0, 0.8, 0.11, 0.09} {
		ws := e.Observe(IterMetrics{Iteration: i, RewardStd: math.NaN(), Entropy: h, GradNorm: 1})
		want := 0
		if i == 3 {
			want = 1
		}
		if len(ws) != want || (want == 1 && ws[0].Signal != SignalEntropyCollapse) {
			t.Errorf("iteration %d (entropy %v): warnings %v", i, h, ws)
		}
	}
}

// Window 3, spike factor 5. Norms 1, 2, 3 build the history (no test
// before three). 4: median(1,2,3) = 2, 4 < 10. History 2, 3, 4: median 3,
// 14 < 15 passes; history 3, 4, 14: median 4, 21 > 20 spikes; history
// 4, 14, 21: median 14; NaN reports as non-finite.
func TestEchoTrapGradNormSpike(t *testing.T) {
	cfg := DefaultEchoTrapConfig()
	cfg.Window = 3
	e := newTrap(t, cfg)
	norms := []float64{1, 2, 3, 4, 14, 21, math.NaN()}
	want := [][]string{nil, nil, nil, nil, nil, {SignalGradNormSpike}, {SignalGradNormNonFinite}}
	refs := []float64{0, 0, 0, 0, 0, 4, 14}
	for i, g := range norms {
		ws := e.Observe(IterMetrics{Iteration: i, RewardStd: math.NaN(), Entropy: math.NaN(), GradNorm: g})
		got := signals(ws)
		if len(got) != len(want[i]) || (len(got) == 1 && (got[0] != want[i][0] || ws[0].Reference != refs[i])) {
			t.Errorf("iteration %d (norm %v): warnings %v, want %v with reference %v", i, g, ws, want[i], refs[i])
		}
	}
}

func TestNewEchoTrapRejectsBadConfig(t *testing.T) {
	for _, mod := range []func(*EchoTrapConfig){
		func(c *EchoTrapConfig) { c.RewardStdDrop = 1.5 },
		func(c *EchoTrapConfig) { c.EntropyDrop = -0.1 },
		func(c *EchoTrapConfig) { c.GradSpike = 0.5 },
		func(c *EchoTrapConfig) { c.Window = 2 },
		func(c *EchoTrapConfig) { c.RewardStdDrop = math.NaN() },
	} {
		cfg := DefaultEchoTrapConfig()
		mod(&cfg)
		if _, err := NewEchoTrap(cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
}
