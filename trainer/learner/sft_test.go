package learner

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trajectory"
)

func tinyModel(t *testing.T) *torch.Model {
	t.Helper()
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	m, err := torch.NewRandomModel(torch.Config{ModelType: "qwen2", Vocab: 16, Hidden: 8, Intermediate: 16, Layers: 1,
		Heads: 2, KVHeads: 1, HeadDim: 4, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 16}, torch.Float32, torch.CPU, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Free)
	return m
}

// The warm start goes through the update's step: a non-finite loss skips
// the step and is counted. An infinite learning rate makes the weights
// non-finite after the first step (finite loss and gradient, the step is
// taken), so the next two mini-batches have NaN losses and are skipped.
func TestSFTCountsSkippedSteps(t *testing.T) {
	m := tinyModel(t)
	var seqs []*trajectory.Trajectory
	for i := range 3 {
		seqs = append(seqs, &trajectory.Trajectory{Tokens: []int32{1, int32(2 + i), 3, 4}, Mask: []uint8{0, 1, 1, 1}})
	}
	var losses []float64
	st, err := SFT(m, nil, seqs, SFTConfig{Epochs: 1, Batch: 1, Micro: 1, LR: math.Inf(1), MaxGradNorm: 1,
		After: func(_, _ int, loss float64) { losses = append(losses, loss) }}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if st.Steps != 3 || st.Skipped != 2 {
		t.Errorf("steps %d, skipped %d; want 3, 2 (losses %v)", st.Steps, st.Skipped, losses)
	}
	if !finite(losses[0]) || finite(losses[1]) || finite(losses[2]) {
		t.Errorf("losses %v: want the first finite, the others not", losses)
	}
}
