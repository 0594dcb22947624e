package algo

import "testing"

// Group 0 scores 1.5, 0.5, 1, 0 (see groupBatch); leave-one-out:
//
//	A = 1.5 - (0.5 + 1 + 0)/3 =  1
//	A = 0.5 - (1.5 + 1 + 0)/3 = -1/3
//	A = 1   - (1.5 + 0.5 + 0)/3 =  1/3
//	A = 0   - (1.5 + 0.5 + 1)/3 = -1
//
// the singleton group 1 gets 0, the equal-score group 2 gets 0.
func TestRLOO(t *testing.T) {
	batch := groupBatch()
	if err := RLOO(batch, nil, DefaultOptions()); err != nil {
		t.Fatal(err)
	}
	checkOutcome(t, batch, map[string]float64{
		"g0s0": 1, "g0s1": -1.0 / 3, "g0s2": 1.0 / 3, "g0s3": -1,
	}, true)
}

func TestRLOOMaskOff(t *testing.T) {
	batch := groupBatch()
	opt := DefaultOptions()
	opt.AdvantageMask = false
	if err := RLOO(batch, nil, opt); err != nil {
		t.Fatal(err)
	}
	checkOutcome(t, batch, map[string]float64{
		"g0s0": 1, "g0s1": -1.0 / 3, "g0s2": 1.0 / 3, "g0s3": -1,
	}, false)
}
