package models

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/internal/hubcache"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/peft"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/learner"
)

// With model.lora the run holds one frozen base model in the run's dtype
// and trains adapters over it (docs/lora.md):
//
//	policy     adapters over the base (a value head too when the critic is shared)
//	critic     a second adapter set with a value head over the same base (model.critic separate)
//	reference  the base itself: the policy with its adapters off, no second copy
//	decoding   a model of the merged weights, refreshed before every rollout
//
// The base is model.path, or the tiny model; a warm start trains the base
// in full before the adapters start over it, and the base is then saved as
// <run>/base (with the tokenizer), so that a resume rebuilds it. Checkpoints
// hold policy/ and critic/ as PEFT adapter folders.

// baseDirName is the folder of the run that holds a base the run made or
// changed (the tiny model, a warm-started one).
const baseDirName = "base"

// loraShape is the adapters' shape model.lora sets over a base of config
// base: all-linear is the projections the base has.
func (m *Set) loraShape(base torch.Config) torch.LoRA {
	l := m.cfg.Model.LoRA
	targets := l.Targets()
	if slices.Contains(l.TargetModules, config.AllLinear) {
		targets = base.AllLinear()
	}
	return torch.LoRA{Rank: l.Rank, Alpha: l.Alpha, Dropout: l.Dropout, Targets: targets}
}

// loadLoRA loads or creates the base, the policy's adapters and a
// separate critic's, and hands them to the learner with the base as the
// KL reference.
func (m *Set) loadLoRA(ck string, rng *rand.Rand) error {
	base, err := m.loadBase(ck)
	if err != nil {
		return err
	}
	m.base = base
	seed := uint64(m.cfg.Run.Seed)
	policy, err := m.loadAdapters(ck, "policy", m.cfg.Model.LoRA.Path, m.sharedCritic(), seed)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	var critic *torch.Model
	if CriticMode(m.cfg) == learner.SeparateCritic {
		dir := ""
		if ck != "" {
			dir = learner.CriticDir(ck)
		}
		if critic, err = m.loadAdapters(dir, "", "", true, seed+1); err != nil {
			policy.Free()
			return fmt.Errorf("critic: %w", err)
		}
	}
	if m.learner, err = learner.New(policy, critic, CriticMode(m.cfg), LearnerSettings(m.cfg), m.dist, rng); err != nil {
		return err
	}
	if m.needsRef() {
		m.learner.SetReference(base)
	}
	return nil
}

// loadBase reads the base: the run's own (<run>/base) on a resume of a run
// that saved one, else model.path, else the tiny model created from the
// seed (fresh: a warm start makes sense).
func (m *Set) loadBase(ck string) (*torch.Model, error) {
	var b *torch.Model
	var err error
	saved := filepath.Join(m.dir, baseDirName)
	_, statErr := os.Stat(filepath.Join(saved, "config.json"))
	switch {
	case ck != "" && statErr == nil:
		b, err = torch.LoadModel(saved, m.dtype, m.device, false)
		m.baseDir = saved
	case m.cfg.Model.Path != "":
		b, err = torch.LoadModel(m.cfg.Model.Path, m.dtype, m.device, false)
		m.baseDir = m.cfg.Model.Path
	default:
		b, err = torch.NewRandomModel(agent.TinyConfig(m.cfg.Model.Tiny, m.tok), m.dtype, m.device, false, uint64(m.cfg.Run.Seed))
		m.fresh = true
	}
	if err != nil {
		return nil, fmt.Errorf("base model: %w", err)
	}
	if err := m.setMode(b); err != nil {
		b.Free()
		return nil, err
	}
	if err := agent.CheckVocab(m.tok, b.Config); err != nil {
		b.Free()
		return nil, fmt.Errorf("base model: %w", err)
	}
	return b, nil
}

// loadAdapters reads an adapter set over m.base: from the checkpoint's
// folder sub (ck/sub; ck alone when sub is ""), else from the PEFT folder
// from (whose shape must be model.lora's), else fresh from seed.
func (m *Set) loadAdapters(ck, sub, from string, valueHead bool, seed uint64) (*torch.Model, error) {
	var a *torch.Model
	var err error
	switch {
	case ck != "":
		a, err = peft.Load(filepath.Join(ck, sub), m.base, valueHead, seed)
	case from != "":
		if err = m.sameShape(from, m.base.Config); err == nil {
			a, err = peft.Load(from, m.base, valueHead, seed)
		}
	default:
		a, err = torch.NewLoRAModel(m.base, m.loraShape(m.base.Config), valueHead, seed)
	}
	if err != nil {
		return nil, err
	}
	if err := m.setMode(a); err != nil {
		a.Free()
		return nil, err
	}
	return a, nil
}

// sameShape checks that the adapter folder dir has, over a base of config
// base, model.lora's rank, alpha, dropout, targets and plain alpha/r
// scaling, naming each that differs.
func (m *Set) sameShape(dir string, base torch.Config) error {
	c, err := peft.ReadConfig(dir)
	if err != nil {
		return err
	}
	got, err := c.Over(base)
	if err != nil {
		return fmt.Errorf("model.lora.path %s: %w", dir, err)
	}
	want := m.loraShape(base)
	var diff []string
	if got.Rank != want.Rank {
		diff = append(diff, fmt.Sprintf("r %d against model.lora.rank %d", got.Rank, want.Rank))
	}
	if got.Alpha != want.Alpha {
		diff = append(diff, fmt.Sprintf("lora_alpha %g against model.lora.alpha %g", got.Alpha, want.Alpha))
	}
	if got.Dropout != want.Dropout {
		diff = append(diff, fmt.Sprintf("lora_dropout %g against model.lora.dropout %g", got.Dropout, want.Dropout))
	}
	if got.RSLoRA {
		diff = append(diff, "use_rslora true (alpha/sqrt(r)) against model.lora's alpha/r")
	}
	if !slices.Equal(got.Targets, want.Targets) {
		diff = append(diff, fmt.Sprintf("target_modules %v against model.lora.target_modules %v", got.Targets, want.Targets))
	}
	if len(diff) > 0 {
		return fmt.Errorf("model.lora.path %s does not match model.lora: %v", dir, diff)
	}
	return nil
}

// WarmStartModel is the model the warm start trains: the policy, or with
// LoRA the base in full (the adapters start over the warm-started base).
func (m *Set) WarmStartModel() *torch.Model {
	if m.base != nil {
		return m.base
	}
	return m.learner.Policy()
}

// SaveBase saves a base the run made or changed (the tiny model, a warm
// start) as <run>/base with the tokenizer, once, through a temporary
// folder, so a resume rebuilds it. A base read unchanged from model.path
// is not copied.
func (m *Set) SaveBase() error {
	if m.base == nil || !(m.fresh || m.baseTrained) || !m.dist.Leader() {
		return nil
	}
	dir := filepath.Join(m.dir, baseDirName)
	tmp := filepath.Join(m.dir, ".tmp-"+baseDirName)
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := m.base.Save(tmp); err != nil {
		return err
	}
	if err := m.tok.Save(tmp); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	m.baseDir = dir
	return nil
}

// baseName is what adapter folders name as their base
// (base_model_name_or_path): the base's folder, absolute when it is local;
// a Hugging Face model id as given, as PEFT writes it, but one with
// "@REVISION" (which the key cannot carry) as its snapshot's folder.
func (m *Set) baseName() string {
	if abs, err := filepath.Abs(m.baseDir); err == nil && m.baseDir != "" {
		if _, err := os.Stat(abs); err == nil {
			return abs
		}
	}
	if strings.Contains(m.baseDir, "@") {
		if dir, err := hubcache.Resolve(m.baseDir); err == nil {
			if abs, err := filepath.Abs(dir); err == nil {
				return abs
			}
		}
	}
	return m.baseDir
}

// exportAdapters writes the policy as a PEFT adapter folder with the
// tokenizer, or with merge a full Hugging Face folder of the merged
// weights.
func (m *Set) exportAdapters(dir string, merge bool) error {
	policy := m.learner.Policy()
	if merge {
		merged, err := torch.NewMergedModel(policy)
		if err != nil {
			return err
		}
		err = merged.Save(dir)
		merged.Free()
		if err != nil {
			return err
		}
	} else if err := peft.Save(dir, policy, m.baseName()); err != nil {
		return err
	}
	return m.tok.Save(dir)
}

// SeedDropout reseeds libtorch's generator, which draws LoRA's dropout
// masks, from the run's seed, the iteration and the rank before each
// update: the masks of an iteration are then those an uninterrupted run
// draws, although a checkpoint does not hold libtorch's generator state.
func SeedDropout(cfg config.Config, rank, iter int) error {
	if !cfg.Model.LoRA.On() || cfg.Model.LoRA.Dropout == 0 {
		return nil
	}
	return torch.ManualSeed(uint64(cfg.Run.Seed)*1_000_003 + uint64(iter)*1_009 + uint64(rank))
}
