package trainer

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
)

func numCPU() int { return runtime.NumCPU() }

// needsCritic: the estimator reads values (GAE), so a value function is
// learned.
func (t *Trainer) needsCritic() bool {
	est, _ := algo.Get(t.cfg.Algorithm.Estimator)
	return est.Critic
}

// needsRef: a KL term to the reference policy is on.
func (t *Trainer) needsRef() bool {
	return t.cfg.Algorithm.KLCoef != 0 && t.cfg.Algorithm.KLMode != "off"
}

func (t *Trainer) sharedCritic() bool { return t.needsCritic() && t.cfg.Model.Critic == "shared" }

// tinyConfig is the Qwen2-style config of a model created from scratch.
func (t *Trainer) tinyConfig() torch.Config {
	c := t.cfg.Model.Tiny
	return torch.Config{ModelType: "qwen2", Vocab: t.tok.VocabSize(), Hidden: c.Hidden, Intermediate: c.Intermediate,
		Layers: c.Layers, Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: c.Hidden / max(c.Heads, 1), RMSEps: 1e-6,
		RopeTheta: 10000, MaxPositions: c.MaxPositions, BOS: int(t.tok.EOS()), EOS: int(t.tok.EOS())}
}

// loadModels loads or creates the policy, then the reference and critic,
// and builds the optimizers.
func (t *Trainer) loadModels(ck string) error {
	var err error
	shared := t.sharedCritic()
	switch {
	case ck != "":
		t.policy, err = torch.LoadModel(filepath.Join(ck, "policy"), t.dtype, t.device, shared)
	case t.cfg.Model.Path != "":
		t.policy, err = torch.LoadModel(t.cfg.Model.Path, t.dtype, t.device, shared)
	default:
		t.policy, err = torch.NewRandomModel(t.tinyConfig(), t.dtype, t.device, shared, uint64(t.cfg.Run.Seed))
		t.fresh = true
	}
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	if err := t.setMode(t.policy); err != nil {
		return err
	}
	if v := t.tok.VocabSize(); v > t.policy.Config.Vocab {
		return fmt.Errorf("the tokenizer has %d tokens but the model's vocab_size is %d", v, t.policy.Config.Vocab)
	}
	if t.needsRef() {
		refDir := filepath.Join(t.dir, "ref")
		switch {
		case t.cfg.Model.RefPath != "":
			t.ref, err = torch.LoadModel(t.cfg.Model.RefPath, t.dtype, t.device, false)
		case ck != "":
			// The reference is the initial policy, saved when the run began.
			t.ref, err = torch.LoadModel(refDir, t.dtype, t.device, false)
		default:
			// Made from the policy after the warm start (see freezeReference).
		}
		if err != nil {
			return fmt.Errorf("reference model: %w", err)
		}
		if t.ref != nil {
			if err := t.setMode(t.ref); err != nil {
				return err
			}
		}
	}
	if t.needsCritic() {
		if shared {
			t.critic = t.policy
		} else {
			switch {
			case ck != "":
				t.critic, err = torch.LoadModel(filepath.Join(ck, "critic"), t.dtype, t.device, true)
			case t.cfg.Model.CriticPath != "":
				t.critic, err = torch.LoadModel(t.cfg.Model.CriticPath, t.dtype, t.device, true)
			default:
				t.critic, err = torch.NewRandomModel(t.policy.Config, t.dtype, t.device, true, uint64(t.cfg.Run.Seed)+1)
				if err == nil {
					err = t.critic.CopyWeightsFrom(t.policy)
				}
			}
			if err != nil {
				return fmt.Errorf("critic: %w", err)
			}
			if err := t.setMode(t.critic); err != nil {
				return err
			}
		}
	}
	return t.buildOptimizers()
}

// buildOptimizers makes AdamW for the policy (its value head, when shared,
// in a second group at the critic's learning rate) and for a separate critic.
func (t *Trainer) buildOptimizers() error {
	o := t.cfg.Optim
	g := torch.AdamWGroup{LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, WeightDecay: o.WeightDecay}
	cg := g
	cg.LR = o.CriticLR
	var err error
	if t.params, err = t.policy.Params(); err != nil {
		return err
	}
	groups := make([]int, len(t.params))
	for i, n := range t.policy.Names() {
		if torch.IsValueHead(n) {
			groups[i] = 1
		}
	}
	if t.opt, err = torch.NewAdamW(t.params, groups, []torch.AdamWGroup{g, cg}); err != nil {
		return err
	}
	if t.critic != nil && t.critic != t.policy {
		if t.criticParams, err = t.critic.Params(); err != nil {
			return err
		}
		if t.criticOpt, err = torch.NewAdamW(t.criticParams, nil, []torch.AdamWGroup{cg}); err != nil {
			return err
		}
	}
	return nil
}

// freezeReference makes the KL reference a frozen copy of the policy as it
// is now (after the warm start) and saves it with the run, so a resumed
// run uses the same reference.
func (t *Trainer) freezeReference() error {
	if !t.needsRef() || t.ref != nil {
		return nil
	}
	ref, err := torch.NewModel(t.policy.Config, t.dtype, t.device, false)
	if err != nil {
		return err
	}
	if err := t.setMode(ref); err != nil {
		ref.Free()
		return err
	}
	if err := ref.CopyWeightsFrom(t.policy); err != nil {
		ref.Free()
		return err
	}
	t.ref = ref
	if !t.dist.Leader() {
		return nil
	}
	refDir := filepath.Join(t.dir, "ref")
	if err := os.RemoveAll(refDir); err != nil {
		return err
	}
	if err := ref.Save(refDir); err != nil {
		return err
	}
	return t.tok.Save(refDir)
}

// setMode applies the run's activation checkpointing (model.checkpointing)
// and mixed precision (device.autocast: forward passes under bf16
// autocast) to a model.
func (t *Trainer) setMode(m *torch.Model) error {
	if err := m.SetCheckpointing(t.cfg.Model.Checkpointing); err != nil {
		return err
	}
	return m.SetAutocast(t.cfg.Device.Autocast, torch.BFloat16)
}
