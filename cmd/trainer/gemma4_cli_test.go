package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/torch"
)

// gemma4 is the default job with a Gemma-4-shaped tiny model
// (model.tiny.model_type gemma4_text over 3 layers: sliding, sliding,
// full) in tinyRun's world, for two GRPO iterations.
var gemma4 = &sharedRun{name: "gemma4", flags: slices.Clip(append(append([]string{"--iterations", "2", "--threads", "1"}, tinyWorld...),
	"--set", "model.tiny.model_type=gemma4_text", "--set", "model.tiny.layers=3",
	"--set", "model.tiny.hidden=32", "--set", "model.tiny.intermediate=64", "--set", "model.tiny.heads=2", "--set", "model.tiny.kv_heads=1",
	"--set", "rollout.batch_size=2", "--set", "rollout.group_size=2", "--set", "rollout.slots=4",
	"--set", "algorithm.mini_batch=4", "--set", "algorithm.micro_batch=4",
	"--set", "sft.demos=8", "--set", "sft.epochs=2", "--set", "eval.max_eval=4",
))}

// The default job runs to the end with a Gemma-4-shaped tiny model
// (rollouts decoded by the engine's sliding and full layer caches, the
// packed training forward, the update), and the exported policy's
// config.json reads back as the gemma4_text model asked for (its layer
// types, window, full layers' head size, per-layer inputs, capped logits)
// and loads.
func TestTrainTinyGemma4(t *testing.T) {
	run := gemma4.get(t)
	checkResults(t, run.out.stdout, "Naive RAG", "Base Tool Call", "RL (grpo)")
	final := filepath.Join(run.dir(), "final")
	cfg, err := torch.ReadConfig(final)
	if err != nil {
		t.Fatal(err)
	}
	s, f := torch.SlidingAttention, torch.FullAttention
	if g := cfg.Gemma; g == nil || !slices.Equal(cfg.LayerTypes, []string{s, s, f}) || cfg.Hidden != 32 || cfg.HeadDim != 16 ||
		g.SlidingWindow != 128 || g.GlobalHeadDim != 32 || g.PerLayerDim != 16 || g.FinalSoftcap != 30 || !cfg.TieEmbeddings {
		t.Errorf("final/config.json read back as %+v", cfg)
	}
	m, err := torch.LoadModel(final, torch.Float32, torch.CPU, false)
	if err != nil {
		t.Fatalf("the exported policy does not load: %v", err)
	}
	m.Free()
}
