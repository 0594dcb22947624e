package metric

import (
	"math"
	"slices"
	"testing"
)

// Sums to means: two policy steps (one skipped), four loss tokens, a value
// head shared with the policy (value loss over policy steps) or a critic
// of its own (over its three steps); the sums survive the round trip
// through the ranks' all-reduce vector.
func TestLossesMean(t *testing.T) {
	sums := Losses{PolicyLoss: 1, KLLoss: 0.5, RouterAuxLoss: 0.25, ValueLoss: 6, Entropy: 8, ClipFracLow: 1, ClipFracHigh: 2,
		ApproxKL: 0.4, GradNorm: 3, CriticGradNorm: 9, Steps: 1, Skipped: 1, PolicySteps: 2, CriticSteps: 3, Tokens: 4}
	var back Losses
	back.SetSums(sums.Sums())
	if !slices.Equal(back.Sums(), sums.Sums()) {
		t.Errorf("sums %v came back %v", sums.Sums(), back.Sums())
	}
	for _, shared := range []bool{true, false} {
		l := sums
		l.Mean(shared)
		value := 2.0 // 6 over three critic steps
		if shared {
			value = 3 // 6 over two policy steps
		}
		got := []float64{l.PolicyLoss, l.KLLoss, l.RouterAuxLoss, l.ValueLoss, l.Entropy, l.ClipFracLow, l.ClipFracHigh, l.ApproxKL, l.GradNorm, l.CriticGradNorm}
		want := []float64{0.5, 0.25, 0.125, value, 2, 0.25, 0.5, 0.1, 3, 3}
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-15 {
				t.Errorf("shared value %v: figure %d = %v, want %v", shared, i, got[i], want[i])
			}
		}
	}
}

// The optional figures appear only where the run has them.
func TestStepOptionalFigures(t *testing.T) {
	m := map[string]float64{}
	Step(m, Losses{}, Learned{WeightMean: math.NaN()}, With{})
	for _, k := range []string{RolloutWeightMean, KLRef, RouterAuxLoss, ValueLoss, CriticGradNorm, ExplainedVariance, OverlongPenalty, OverlongMasked} {
		if _, ok := m[k]; ok {
			t.Errorf("%s recorded without its setting", k)
		}
	}
	Step(m, Losses{RouterAux: true}, Learned{WeightMean: 1, HasRef: true}, With{Critic: true, OverlongPenalty: true, OverlongFilter: true})
	for _, k := range []string{RolloutWeightMean, KLRef, RouterAuxLoss, ValueLoss, CriticGradNorm, ExplainedVariance, OverlongPenalty, OverlongMasked} {
		if _, ok := m[k]; !ok {
			t.Errorf("%s not recorded with its setting", k)
		}
	}
	for k := range m {
		if !Declared(k) {
			t.Errorf("%s recorded but not declared", k)
		}
	}
}
