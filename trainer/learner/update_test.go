package learner

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trajectory"
)

// The KL-in-reward penalty: k1 = old - ref on the policy's tokens, 0 on
// the prompt and tool tokens, for trajectories of different lengths.
// Trajectory a: tokens 2 and 3 are the policy's, old - ref = 0.5 and -0.25;
// b: token 1 alone, old - ref = 2. The mean over the three tokens is
// (0.5 - 0.25 + 2) / 3 = 0.75.
func TestReferenceKLByHand(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	a := &trajectory.Trajectory{Tokens: []int32{1, 2, 3, 4}, Mask: []uint8{0, 0, 1, 1}}
	b := &trajectory.Trajectory{Tokens: []int32{1, 2}, Mask: []uint8{0, 1}}
	data := TokenTable{
		a: {Old: []float32{0, -1, -1, -2}, Ref: []float32{0, -9, -1.5, -1.75}},
		b: {Old: []float32{0, -1}, Ref: []float32{0, -3}},
	}
	l := &Learner{ref: &torch.Model{}, s: Settings{Loss: algo.LossConfig{KLEstimator: "k1"}}}
	var r UpdateResult
	kl, err := l.referenceKL([]*trajectory.Trajectory{a, b}, data, &r)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float32{{0, 0, 0.5, -0.25}, {0, 2}}
	for i := range want {
		for j := range want[i] {
			if math.Abs(float64(kl[i][j]-want[i][j])) > 1e-6 {
				t.Errorf("trajectory %d token %d: kl %v, want %v", i, j, kl[i][j], want[i][j])
			}
		}
	}
	if !r.HasRef || math.Abs(r.KLRef-0.75) > 1e-6 {
		t.Errorf("kl_ref %v (has ref %v), want 0.75", r.KLRef, r.HasRef)
	}
}
