package main

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/torch"
)

// nemotron is the default job with a Nemotron-H-shaped tiny model
// (model.tiny.model_type nemotron_h over 4 layers: a Mamba-2 block, an
// attention block, an MLP block and a mixture of experts, the pattern
// M*-E) in tinyRun's world, for two GRPO iterations with routing replay.
var nemotron = &sharedRun{name: "nemotron", flags: slices.Clip(append(append([]string{"--iterations", "2", "--threads", "1"}, tinyWorld...),
	"--set", "model.tiny.model_type=nemotron_h", "--set", "model.tiny.layers=4", "--set", "model.tiny.nemotron_pattern=M*-E",
	"--set", "model.tiny.moe_intermediate=16", "--set", "algorithm.routing_replay=true",
	"--set", "model.tiny.hidden=32", "--set", "model.tiny.intermediate=64", "--set", "model.tiny.heads=2", "--set", "model.tiny.kv_heads=1",
	"--set", "rollout.batch_size=2", "--set", "rollout.group_size=2", "--set", "rollout.slots=4",
	"--set", "algorithm.mini_batch=4", "--set", "algorithm.micro_batch=4",
	"--set", "sft.demos=8", "--set", "sft.epochs=2", "--set", "eval.max_eval=4",
))}

// The default job runs to the end with a Nemotron-H-shaped tiny model
// (rollouts decoded with the Mamba-2 states per slot and the experts
// recorded, the training forward replaying them, the update), and the
// exported policy loads back as a nemotron_h model with the blocks,
// Mamba-2 sizes and experts asked for.
func TestTrainTinyNemotronH(t *testing.T) {
	run := nemotron.get(t)
	checkResults(t, run.out.stdout, "Naive RAG", "Base Tool Call", "RL (grpo)")
	final := filepath.Join(run.dir(), "final")
	cfg, err := torch.ReadConfig(final)
	if err != nil {
		t.Fatal(err)
	}
	n := cfg.Nemotron
	if cfg.ModelType != torch.NemotronH || n.Pattern() != "M*-E" || cfg.MoE.Experts != 4 || cfg.MoE.Intermediate != 16 || cfg.Hidden != 32 || n.Heads != 2 || n.HeadDim != 32 ||
		n.Groups != 1 || n.State != 16 || n.ConvKernel != 4 || cfg.Intermediate != 64 {
		t.Errorf("final/config.json read back as %+v", cfg)
	}
	m, err := torch.LoadModel(final, torch.Float32, torch.CPU, false)
	if err != nil {
		t.Fatalf("the exported policy does not load: %v", err)
	}
	m.Free()
}
