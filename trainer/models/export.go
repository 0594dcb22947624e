package models

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/peft"
	"github.com/agentrl/agentrl/trainer/learner"
)

// save writes the models' part of a checkpoint into dir: the policy
// (ExportPolicy) as dir/policy, a separate critic and the optimizers'
// state opt (learner.Save).
func (m *Set) save(dir string, opt *learner.OptimizerState) error {
	if err := m.ExportPolicy(filepath.Join(dir, "policy")); err != nil {
		return err
	}
	return m.learner.Save(dir, opt)
}

// ExportFinal exports the trained policy to <run>/final through a
// temporary folder beside it, so that a kill mid-export leaves no partial
// model folder and no temporary file inside one: final is either the
// previous export or the whole new one. A leftover temporary folder from a
// killed export is removed by the next.
func (m *Set) ExportFinal() error {
	final := filepath.Join(m.dir, "final")
	tmp := filepath.Join(m.dir, ".tmp-final")
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	export := m.ExportPolicy
	if m.base != nil && m.cfg.Model.LoRA.Merge {
		export = func(dir string) error { return m.exportAdapters(dir, true) }
	}
	if err := export(tmp); err != nil {
		return err
	}
	stage("final")
	if err := os.RemoveAll(final); err != nil {
		return err
	}
	return os.Rename(tmp, final)
}

// ExportPolicy writes the policy and its tokenizer as a Hugging Face
// folder, or with LoRA as a PEFT adapter folder.
func (m *Set) ExportPolicy(dir string) error {
	if m.base != nil {
		return m.exportAdapters(dir, false)
	}
	if err := m.learner.Policy().Save(dir); err != nil {
		return err
	}
	return m.tok.Save(dir)
}

// ExportWeights writes the policy's weights as a Hugging Face folder
// (config.json and safetensors, no tokenizer) for a rollout engine to load:
// with LoRA the merged weights, base plus adapters.
func (m *Set) ExportWeights(dir string) error {
	if m.base != nil {
		merged, err := torch.NewMergedModel(m.learner.Policy())
		if err != nil {
			return err
		}
		defer merged.Free()
		return merged.Save(dir)
	}
	return m.learner.Policy().Save(dir)
}

// ExportBase writes the frozen base of a LoRA run's policy as a Hugging
// Face folder (config.json and safetensors, no tokenizer), for a rollout
// engine that applies the adapters itself (ExportAdapters); without LoRA
// it is an error.
func (m *Set) ExportBase(dir string) error {
	if m.base == nil {
		return errors.New("export base: the policy has no LoRA adapters")
	}
	return m.base.Save(dir)
}

// ExportAdapters writes the policy's LoRA adapters as a PEFT adapter
// folder (no tokenizer), for a rollout engine holding the base
// (ExportBase).
func (m *Set) ExportAdapters(dir string) error {
	if m.base == nil {
		return errors.New("export adapters: the policy has no LoRA adapters")
	}
	return peft.Save(dir, m.learner.Policy(), m.baseName())
}
