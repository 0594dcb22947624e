package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/peft"
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

// The default job runs to the end with the tiny Gemma 4, LoRA adapters
// (all-linear, rank 4: the per-layer input projections included) and activation checkpointing, for one iteration:
// the run's final adapter folder loads over its base, each adapter on a
// projection the base has.
func TestTrainTinyGemma4LoRACheckpointing(t *testing.T) {
	runs := t.TempDir()
	args := append([]string{"train", "--run-dir", runs, "--run", "gemma4-lora"}, gemma4.flags...)
	r := ok(t, append(args, "--iterations", "1", "--set", "model.lora.rank=4", "--set", "model.lora.alpha=8",
		"--set", "model.checkpointing=true")...)
	checkResults(t, r.stdout, "Naive RAG", "Base Tool Call", "RL (grpo)")
	run := filepath.Join(runs, "gemma4-lora")
	base, err := torch.LoadModel(filepath.Join(run, "base"), torch.Float32, torch.CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Free()
	if !base.Config.IsGemma4() {
		t.Fatalf("the run's base is %s, want gemma4_text", base.Config.ModelType)
	}
	m, err := peft.Load(filepath.Join(run, "final"), base, false, 0)
	if err != nil {
		t.Fatalf("the run's final adapters do not load over its base: %v", err)
	}
	defer m.Free()
	if l := m.LoRA(); l == nil || !slices.Equal(l.Targets, base.Config.AllLinear()) || len(l.Targets) != 10 {
		t.Errorf("final adapters %+v, want all-linear's ten targets (the per-layer input projections included)", l)
	}
}
