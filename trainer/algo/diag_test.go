package algo

import (
	"math"
	"testing"
)

func TestPolicyDiagnosticsByHand(t *testing.T) {
	// r = 0.5 with A<0 -> low clip; r = 2 with A>0 -> high clip; r = 1 -> none.
	lp := []float32{float32(math.Log(0.5)), float32(math.Log(2)), 0, 5}
	d := PolicyDiagnostics(lp, []float32{0, 0, 0, 0}, []float32{-1, 1, 1, 1}, []float32{1, 1, 1, 0}, 0.2, 0.28)
	// approx kl = mean((r-1) - log r) = ((-.5+ln2) + (1-ln2) + 0)/3 = 0.5/3
	if d.ClipFracLow != 1.0/3 || d.ClipFracHigh != 1.0/3 || math.Abs(d.ApproxKL-0.5/3) > 1e-6 || d.Tokens != 3 {
		t.Fatalf("diag %+v", d)
	}
}
