package trainer

import (
	"testing"

	"github.com/rs/zerolog"
)

// The loop feeds each iteration's group_reward_std, grad_norm and entropy
// to the echo-trap tracker (defaults: a tenth of the peak, five times the
// median of the last ten gradient norms). Reward std 0.4, 0.5, then 0.04
// (below 0.05 = a tenth of the 0.5 peak) raises one signal at iteration 3;
// a steady entropy and gradient norm raise none.
func TestEchoTrapSignalsInLoop(t *testing.T) {
	tr := &Trainer{log: zerolog.Nop()}
	for i, std := range []float64{0.4, 0.5, 0.04} {
		m := map[string]float64{"group_reward_std": std, "grad_norm": 1, "entropy": 2}
		if err := tr.echoTrap(i+1, m); err != nil {
			t.Fatal(err)
		}
		want := 0.0
		if i == 2 {
			want = 1
		}
		if m["echo_trap_signals"] != want {
			t.Errorf("iteration %d: echo_trap_signals %v, want %v", i+1, m["echo_trap_signals"], want)
		}
	}
}
