package learner

import (
	"testing"

	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trajectory"
)

// A mini-batch's normaliser: its loss tokens under the mask switch, its
// sequences, and seq-mean-token-sum-norm's constant horizon from the loss
// config (without it that aggregation divided by 0 and every step was
// skipped as non-finite).
func TestLearnerNorm(t *testing.T) {
	mini := []*trajectory.Trajectory{
		{Tokens: []int32{1, 2, 3, 4}, Mask: []uint8{0, 1, 0, 1}, PromptLen: 1},
		{Tokens: []int32{1, 2, 3}, Mask: []uint8{0, 0, 1}, PromptLen: 2},
	}
	for _, tc := range []struct {
		mask   bool
		tokens float64
	}{{true, 3}, {false, 4}} {
		l := &Learner{s: Settings{LossMask: tc.mask, Loss: algo.LossConfig{LossAgg: "seq-mean-token-sum-norm"}, Horizon: 64}}
		if got, want := l.norm(mini), (algo.Norm{Tokens: tc.tokens, Sequences: 2, Horizon: 64}); got != want {
			t.Errorf("loss mask %v: norm %+v, want %+v", tc.mask, got, want)
		}
	}
}
