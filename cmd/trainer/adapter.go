package main

import (
	"fmt"
	"path/filepath"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/peft"
	"github.com/agentrl/agentrl/trainer/config"
)

// adapterDecoded is what chat, eval and serve do with --adapter.
const adapterDecoded = " over the model; decoded from the merged weights"

// isAdapterFolder reports whether dir is a PEFT adapter folder.
func isAdapterFolder(dir string) bool { return exists(filepath.Join(dir, peft.ConfigFile)) }

// runFinal is the final policy of the run in runDir: its final/ folder,
// or, when that is a LoRA run's adapter folder, the base (the run's own
// base/, else its config's model.path) with final/ as the adapter.
func runFinal(runDir string) (model, adapter string, err error) {
	final := filepath.Join(runDir, "final")
	if !isAdapterFolder(final) {
		return final, "", nil
	}
	if base := filepath.Join(runDir, "base"); exists(filepath.Join(base, "config.json")) {
		return base, final, nil
	}
	cfg, err := config.Load(filepath.Join(runDir, "config.yaml"))
	if err != nil {
		return "", "", fmt.Errorf("the base of run %s's adapters: %w", runDir, err)
	}
	if cfg.Model.Path == "" {
		return "", "", fmt.Errorf("run %s's final policy is an adapter folder, but the run has neither a base/ folder nor a model.path", runDir)
	}
	return cfg.Model.Path, final, nil
}

// loadPolicy loads the model folder in dt, and with adapter a PEFT
// adapter folder over it: the LoRA model is returned, which
// agent.NewSampler decodes from merged weights. free releases all.
func loadPolicy(model, adapter string, dt torch.DType, dev torch.Device) (m *torch.Model, free func(), err error) {
	base, err := torch.LoadModel(model, dt, dev, false)
	if err != nil {
		return nil, nil, err
	}
	if adapter == "" {
		return base, base.Free, nil
	}
	lora, err := peft.Load(adapter, base, false, 0)
	if err != nil {
		base.Free()
		return nil, nil, err
	}
	return lora, func() { lora.Free(); base.Free() }, nil
}

// loraFromAdapter sets cfg's model.lora to the adapter folder's shape, as
// a run that starts from it (model.lora.path).
func loraFromAdapter(cfg *config.Config, adapter string) error {
	ac, err := peft.ReadConfig(adapter)
	if err != nil {
		return err
	}
	l := &cfg.Model.LoRA
	l.Rank, l.Alpha, l.Dropout, l.TargetModules, l.Path, l.Merge = ac.LoRA.Rank, ac.LoRA.Alpha, ac.LoRA.Dropout, ac.LoRA.Targets, adapter, false
	return nil
}
