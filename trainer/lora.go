package trainer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/peft"
	"github.com/agentrl/agentrl/trainer/agent"
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

// loraShape is the adapters' shape model.lora sets.
func (t *Trainer) loraShape() torch.LoRA {
	l := t.cfg.Model.LoRA
	return torch.LoRA{Rank: l.Rank, Alpha: l.Alpha, Dropout: l.Dropout, Targets: l.Targets()}
}

// loadLoRAModels loads or creates the base, the policy's adapters and a
// separate critic's, and hands them to the learner with the base as the
// KL reference.
func (t *Trainer) loadLoRAModels(ck string) error {
	base, err := t.loadBase(ck)
	if err != nil {
		return err
	}
	t.base = base
	seed := uint64(t.cfg.Run.Seed)
	policy, err := t.loadAdapters(ck, "policy", t.cfg.Model.LoRA.Path, t.sharedCritic(), seed)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	var critic *torch.Model
	if t.criticMode() == learner.SeparateCritic {
		dir := ""
		if ck != "" {
			dir = learner.CriticDir(ck)
		}
		if critic, err = t.loadAdapters(dir, "", "", true, seed+1); err != nil {
			policy.Free()
			return fmt.Errorf("critic: %w", err)
		}
	}
	if t.learner, err = learner.New(policy, critic, t.criticMode(), t.learnerSettings(), t.dist, t.rng); err != nil {
		return err
	}
	if t.needsRef() {
		t.learner.SetReference(base)
	}
	return nil
}

// loadBase reads the base: the run's own (<run>/base) on a resume of a run
// that saved one, else model.path, else the tiny model created from the
// seed (fresh: a warm start makes sense).
func (t *Trainer) loadBase(ck string) (*torch.Model, error) {
	var b *torch.Model
	var err error
	saved := filepath.Join(t.dir, baseDirName)
	_, statErr := os.Stat(filepath.Join(saved, "config.json"))
	switch {
	case ck != "" && statErr == nil:
		b, err = torch.LoadModel(saved, t.dtype, t.device, false)
		t.baseDir = saved
	case t.cfg.Model.Path != "":
		b, err = torch.LoadModel(t.cfg.Model.Path, t.dtype, t.device, false)
		t.baseDir = t.cfg.Model.Path
	default:
		b, err = torch.NewRandomModel(agent.TinyConfig(t.cfg.Model.Tiny, t.agent.Tokenizer), t.dtype, t.device, false, uint64(t.cfg.Run.Seed))
		t.fresh = true
	}
	if err != nil {
		return nil, fmt.Errorf("base model: %w", err)
	}
	if err := t.setMode(b); err != nil {
		b.Free()
		return nil, err
	}
	if v := t.agent.Tokenizer.VocabSize(); v > b.Config.Vocab {
		b.Free()
		return nil, fmt.Errorf("the tokenizer has %d tokens but the base model's vocab_size is %d", v, b.Config.Vocab)
	}
	return b, nil
}

// loadAdapters reads an adapter set over t.base: from the checkpoint's
// folder sub (ck/sub; ck alone when sub is ""), else from the PEFT folder
// from (whose shape must be model.lora's), else fresh from seed.
func (t *Trainer) loadAdapters(ck, sub, from string, valueHead bool, seed uint64) (*torch.Model, error) {
	var m *torch.Model
	var err error
	switch {
	case ck != "":
		m, err = peft.Load(filepath.Join(ck, sub), t.base, valueHead, seed)
	case from != "":
		if err = t.sameShape(from); err == nil {
			m, err = peft.Load(from, t.base, valueHead, seed)
		}
	default:
		m, err = torch.NewLoRAModel(t.base, t.loraShape(), valueHead, seed)
	}
	if err != nil {
		return nil, err
	}
	if err := t.setMode(m); err != nil {
		m.Free()
		return nil, err
	}
	return m, nil
}

// sameShape checks that the adapter folder dir has model.lora's rank,
// alpha, dropout, targets and plain alpha/r scaling, naming each that differs.
func (t *Trainer) sameShape(dir string) error {
	c, err := peft.ReadConfig(dir)
	if err != nil {
		return err
	}
	want, got := t.loraShape(), c.LoRA
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

// warmStartModel is the model the warm start trains: the policy, or with
// LoRA the base in full (the adapters start over the warm-started base).
func (t *Trainer) warmStartModel() *torch.Model {
	if t.base != nil {
		return t.base
	}
	return t.learner.Policy()
}

// saveBase saves a base the run made or changed (the tiny model, a warm
// start) as <run>/base with the tokenizer, once, through a temporary
// folder, so a resume rebuilds it. A base read unchanged from model.path
// is not copied.
func (t *Trainer) saveBase() error {
	if t.base == nil || !(t.fresh || t.baseTrained) || !t.dist.Leader() {
		return nil
	}
	dir := filepath.Join(t.dir, baseDirName)
	tmp := filepath.Join(t.dir, ".tmp-"+baseDirName)
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := t.base.Save(tmp); err != nil {
		return err
	}
	if err := t.agent.Tokenizer.Save(tmp); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	t.baseDir = dir
	return nil
}

// baseName is what adapter folders name as their base
// (base_model_name_or_path): the base's folder, absolute when it is local.
func (t *Trainer) baseName() string {
	if abs, err := filepath.Abs(t.baseDir); err == nil && t.baseDir != "" {
		if _, err := os.Stat(abs); err == nil {
			return abs
		}
	}
	return t.baseDir
}

// exportAdapters writes the policy as a PEFT adapter folder with the
// tokenizer, or with merge a full Hugging Face folder of the merged
// weights.
func (t *Trainer) exportAdapters(dir string, merge bool) error {
	policy := t.learner.Policy()
	if merge {
		m, err := torch.NewMergedModel(policy)
		if err != nil {
			return err
		}
		err = m.Save(dir)
		m.Free()
		if err != nil {
			return err
		}
	} else if err := peft.Save(dir, policy, t.baseName()); err != nil {
		return err
	}
	return t.agent.Tokenizer.Save(dir)
}

// seedDropout reseeds libtorch's generator, which draws LoRA's dropout
// masks, from the run's seed, the iteration and the rank before each
// update: the masks of an iteration are then those an uninterrupted run
// draws, although a checkpoint does not hold libtorch's generator state.
func (t *Trainer) seedDropout(iter int) error {
	if t.base == nil || t.cfg.Model.LoRA.Dropout == 0 {
		return nil
	}
	return torch.ManualSeed(uint64(t.cfg.Run.Seed)*1_000_003 + uint64(iter)*1_009 + uint64(t.dist.Rank()))
}
