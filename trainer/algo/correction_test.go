package algo

import (
	"math"
	"strings"
	"testing"
)

// With identical engines every weight is exactly 1, at every level.
func TestRolloutWeightsIdenticalEngines(t *testing.T) {
	lp := []float32{0, -1.3, -0.2, -7.9, 0}
	mask := []uint8{0, 1, 1, 1, 0}
	for _, mode := range RolloutCorrections[1:] {
		w, err := RolloutWeights(lp, lp, mask, mode, 2)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range w {
			if x != 1 {
				t.Errorf("%s: weight[%d] = %v, want exactly 1", mode, i, x)
			}
		}
	}
	if w, err := RolloutWeights(lp, lp, mask, "off", 2); w != nil || err != nil {
		t.Errorf("off: %v, %v; want no weights", w, err)
	}
}

// Perturbed behaviour logprobs, C = 2. Action tokens 1-4 with ratios
// r = pi_old/pi_behaviour = 1, 1.5, 3, 0.25; rho = 1(1.5)(3)(0.25) = 1.125.
//
//	tis      min(r, 2):            1, 1.5, 2, 0.25
//	mis      r in [0.5, 2] else 0: 1, 1.5, 0, 0
//	tis_seq  min(1.125, 2) = 1.125 on each
//	mis_seq  1.125 in [0.5, 2]: 1.125 on each
//
// Tokens 0 and 5 are not actions: weight 1. Without token 4 (masked out of
// the actions), rho = 4.5: tis_seq 2, mis_seq 0 (the sequence is dropped).
func TestRolloutWeightsByHand(t *testing.T) {
	d := []float64{0, 0, math.Log(1.5), math.Log(3), -math.Log(4), 0}
	train := []float32{-0.3, -1, -2, -0.5, -1.2, -0.7}
	behaviour := make([]float32, len(train))
	for i := range train {
		behaviour[i] = float32(float64(train[i]) - d[i])
	}
	behaviour[0], behaviour[5] = 0, 0
	mask := []uint8{0, 1, 1, 1, 1, 0}
	for mode, want := range map[string][]float64{
		"tis":     {1, 1, 1.5, 2, 0.25, 1},
		"mis":     {1, 1, 1.5, 0, 0, 1},
		"tis_seq": {1, 1.125, 1.125, 1.125, 1.125, 1},
		"mis_seq": {1, 1.125, 1.125, 1.125, 1.125, 1},
	} {
		w, err := RolloutWeights(behaviour, train, mask, mode, 2)
		if err != nil {
			t.Fatal(err)
		}
		assertSlice(t, mode, w, want)
	}
	short := []uint8{0, 1, 1, 1, 0, 0}
	for mode, want := range map[string][]float64{"tis_seq": {1, 2, 2, 2, 1, 1}, "mis_seq": {1, 0, 0, 0, 1, 1}} {
		w, err := RolloutWeights(behaviour, train, short, mode, 2)
		if err != nil {
			t.Fatal(err)
		}
		assertSlice(t, mode+" (rho 4.5)", w, want)
	}
	if _, err := RolloutWeights(behaviour, train, mask, "is", 2); err == nil || !strings.Contains(err.Error(), `"is"`) {
		t.Errorf("unknown mode: %v", err)
	}
	if _, err := RolloutWeights(behaviour, train, mask, "tis", 1); err == nil || !strings.Contains(err.Error(), "bound 1") {
		t.Errorf("bound 1: %v", err)
	}
	if _, err := RolloutWeights(nil, train, mask, "tis", 2); err == nil {
		t.Error("missing behaviour logprobs accepted")
	}
}
