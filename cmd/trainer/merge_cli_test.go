package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/peft"
)

// trainer merge refuses an adapter whose merge overflows the dtype
// (lora_alpha 1e10 over an f16 base: B A times 2.5e9), naming the weight,
// exits non-zero, and writes nothing to --out.
func TestMergeRefusesNonFinite(t *testing.T) {
	cfg := torch.Config{ModelType: "qwen2", Vocab: 64, Hidden: 32, Intermediate: 48, Layers: 2, Heads: 4, KVHeads: 2,
		HeadDim: 8, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 128}
	b, err := torch.NewRandomModel(cfg, torch.Float16, torch.CPU, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Free()
	base := filepath.Join(t.TempDir(), "base")
	if err := b.Save(base); err != nil {
		t.Fatal(err)
	}
	lora, err := torch.NewLoRAModel(b, torch.LoRA{Rank: 4, Alpha: 1e10, Targets: []string{"q_proj"}}, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer lora.Free()
	randomize(t, lora)
	adapter := filepath.Join(t.TempDir(), "adapter")
	if err := peft.Save(adapter, lora, base); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "merged")
	fails(t, []string{"weight model.layers.0.self_attn.q_proj.weight is not finite", "lora_alpha"},
		"merge", "--model", base, "--adapter", adapter, "--out", out)
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("--out %s was made: %v", out, err)
	}
}
