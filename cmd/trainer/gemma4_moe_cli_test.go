package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/torch"
)

// gemma4MoE is gemma4's job with the tiny model's MoE block on
// (model.tiny.moe_block: 4 experts of width 32, 2 a token, beside each
// layer's MLP) and routing replay.
var gemma4MoE = &sharedRun{name: "gemma4-moe", flags: slices.Clip(append(slices.Clone(gemma4.flags),
	"--set", "model.tiny.moe_block=true", "--set", "model.tiny.moe_intermediate=32",
	"--set", "algorithm.routing_replay=true"))}

// The default job runs to the end with a tiny Gemma 4 MoE (rollouts
// decoded and their routing recorded by the engine, the training forwards
// replaying it, the update), and the exported policy's config.json reads
// back with its MoE block and loads.
func TestTrainTinyGemma4MoE(t *testing.T) {
	run := gemma4MoE.get(t)
	checkResults(t, run.out.stdout, "Naive RAG", "Base Tool Call", "RL (grpo)")
	final := filepath.Join(run.dir(), "final")
	cfg, err := torch.ReadConfig(final)
	if err != nil {
		t.Fatal(err)
	}
	if m := cfg.MoE; cfg.Gemma == nil || m.Experts != 4 || m.ExpertsPerToken != 2 || m.Intermediate != 32 || cfg.SparseLayers() != 3 {
		t.Errorf("final/config.json read back as %+v", cfg)
	}
	m, err := torch.LoadModel(final, torch.Float32, torch.CPU, false)
	if err != nil {
		t.Fatalf("the exported policy does not load: %v", err)
	}
	m.Free()
}
