package torchdecoder

import (
	"slices"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/torchtest"
)

func TestMain(m *testing.M) { torchtest.Main(m) }

// On the CPU the decoder's PrefillBatch prefills slot by slot: a
// slot's pending logits are bit for bit those of its own Prefill, whatever
// was prefilled beside it (one forward of several slots, the engine's own
// PrefillBatch, rounds differently on the CPU).
func TestPrefillBatchOnCPUIsPerSlot(t *testing.T) {
	cfg := torch.Config{ModelType: "qwen2", Vocab: 97, Hidden: 32, Intermediate: 48, Layers: 2, Heads: 4, KVHeads: 2,
		HeadDim: 8, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 256}
	m, err := torch.NewRandomModel(cfg, torch.Float32, torch.CPU, false, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	ids := [][]int64{{3, 1, 4, 1, 5}, {9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4, 6, 2, 6, 4, 3}, {2, 7}}
	slots := []int{2, 0, 1}
	alone, err := torch.NewEngine(m, 3, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer alone.Free()
	batched, err := torch.NewEngine(m, 3, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer batched.Free()
	for i, s := range slots {
		if err := alone.Prefill(s, ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := (Decoder{batched}).PrefillBatch(slots, ids); err != nil {
		t.Fatal(err)
	}
	for _, s := range slots {
		want, _ := alone.PendingLogits(s)
		got, err := batched.PendingLogits(s)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("slot %d: pending logits differ from the slot's own prefill", s)
		}
	}
	if err := (Decoder{batched}).PrefillBatch([]int{0}, nil); err == nil {
		t.Error("one slot and no token lists: no error")
	}
}
