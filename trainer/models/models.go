// Package models owns a run's models: it loads or creates the policy, a
// separate critic and the KL reference (or, with model.lora, the frozen
// base and the adapters over it), hands them to the learner, restores
// their optimizers, keeps the ranks' weights identical, freezes the
// reference after the warm start, and writes them out: the run's
// checkpoints (checkpoint.go) and the final policy (export.go).
package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/learner"
)

// Set owns the run's models: it loads or creates the policy, a separate
// critic and the KL reference (or, with model.lora, the frozen base and
// the adapters over it: lora.go), hands them to the learner, which builds
// and steps their optimizers, restores the optimizers from a checkpoint,
// keeps the ranks' weights identical, freezes the reference after the
// warm start, and exports the policy (checkpoints, <run>/final). The
// trainer's loop, data and store use it; it knows nothing of them.
type Set struct {
	cfg     config.Config
	dir     string      // the run's folder: <run>/ref, <run>/base
	dist    *dist.Group // nil: a single process
	tok     *tokenizer.Tokenizer
	device  torch.Device
	dtype   torch.DType
	learner *learner.Learner // owns the policy, critic, reference and their optimizers
	// fresh is true when the policy was created here (not loaded), so a
	// warm start makes sense.
	fresh bool
	// base is the frozen model under the adapters with model.lora (nil
	// without); baseDir the folder it was read from or saved to, and
	// baseTrained says a warm start trained it (lora.go).
	base        *torch.Model
	baseDir     string
	baseTrained bool
}

// New loads or creates the run's models in the run folder dir, from the
// checkpoint ck when it is not "", for the tokenizer tok; rng shuffles
// the learner's mini-batches.
func New(cfg config.Config, dir string, g *dist.Group, tok *tokenizer.Tokenizer, device torch.Device, dtype torch.DType,
	rng *rand.Rand, ck string) (*Set, error) {
	m := &Set{cfg: cfg, dir: dir, dist: g, tok: tok, device: device, dtype: dtype}
	if err := m.load(ck, rng); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// Learner is the learner that updates the models.
func (m *Set) Learner() *learner.Learner { return m.learner }

// Fresh reports whether the policy (or LoRA's base) was created here, not
// loaded, so that a warm start on scripted demonstrations makes sense.
func (m *Set) Fresh() bool { return m.fresh }

// LoRA reports whether the run trains adapters over a frozen base
// (model.lora).
func (m *Set) LoRA() bool { return m.base != nil }

// Close frees the learner (its models and optimizers) and the base.
func (m *Set) Close() {
	if m == nil {
		return
	}
	m.learner.Close()
	m.base.Free() // the learner's reference when there is one: freed once
}

// needsRef: a KL term to the reference policy is on.
func (m *Set) needsRef() bool {
	return m.cfg.Algorithm.KLCoef != 0 && m.cfg.Algorithm.KLMode != "off"
}

func (m *Set) sharedCritic() bool { return CriticMode(m.cfg) == learner.SharedCritic }

// load loads or creates the policy, the critic and the reference, and
// hands them to the learner, which builds their optimizers.
func (m *Set) load(ck string, rng *rand.Rand) error {
	if m.cfg.Model.LoRA.On() {
		return m.loadLoRA(ck, rng)
	}
	policy, err := m.loadPolicy(ck)
	if err != nil {
		return err
	}
	ref, err := m.loadReference(ck)
	if err != nil {
		policy.Free()
		return err
	}
	var critic *torch.Model
	if CriticMode(m.cfg) == learner.SeparateCritic {
		if critic, err = m.loadCritic(ck, policy); err != nil {
			policy.Free()
			ref.Free()
			return err
		}
	}
	if m.learner, err = learner.New(policy, critic, CriticMode(m.cfg), LearnerSettings(m.cfg), m.dist, rng); err != nil {
		ref.Free()
		return err
	}
	m.learner.SetReference(ref)
	return nil
}

// CriticMode is how the estimator's value function is held: none (the
// estimator reads no values), a head on the policy, or a model of its own
// (model.critic).
func CriticMode(cfg config.Config) learner.CriticMode {
	est, _ := algo.Get(cfg.Algorithm.Estimator)
	switch {
	case !est.Critic:
		return learner.NoCritic
	case cfg.Model.Critic == "shared":
		return learner.SharedCritic
	}
	return learner.SeparateCritic
}

// loadPolicy reads the policy from the checkpoint or model.path, or
// creates the tiny model of the synthetic world.
func (m *Set) loadPolicy(ck string) (*torch.Model, error) {
	var p *torch.Model
	var err error
	shared := m.sharedCritic()
	switch {
	case ck != "":
		p, err = torch.LoadModel(filepath.Join(ck, "policy"), m.dtype, m.device, shared)
	case m.cfg.Model.Path != "":
		p, err = torch.LoadModel(m.cfg.Model.Path, m.dtype, m.device, shared)
	default:
		p, err = torch.NewRandomModel(agent.TinyConfig(m.cfg.Model.Tiny, m.tok), m.dtype, m.device, shared, uint64(m.cfg.Run.Seed))
		m.fresh = true
	}
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if err := m.setMode(p); err != nil {
		p.Free()
		return nil, err
	}
	if err := agent.CheckVocab(m.tok, p.Config); err != nil {
		p.Free()
		return nil, fmt.Errorf("policy: %w", err)
	}
	return p, nil
}

// loadReference reads the KL reference (model.ref_path, or the run's own
// from a checkpoint); nil when there is none yet: FreezeReference makes
// it from the policy after the warm start.
func (m *Set) loadReference(ck string) (*torch.Model, error) {
	if !m.needsRef() {
		return nil, nil
	}
	var ref *torch.Model
	var err error
	switch {
	case m.cfg.Model.RefPath != "":
		ref, err = torch.LoadModel(m.cfg.Model.RefPath, m.dtype, m.device, false)
	case ck != "":
		// The reference is the initial policy, saved when the run began.
		ref, err = torch.LoadModel(filepath.Join(m.dir, "ref"), m.dtype, m.device, false)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reference model: %w", err)
	}
	if err := m.setMode(ref); err != nil {
		ref.Free()
		return nil, err
	}
	return ref, nil
}

// loadCritic reads a separate critic from the checkpoint or
// model.critic_path, or makes one from the policy with a fresh value head.
func (m *Set) loadCritic(ck string, policy *torch.Model) (*torch.Model, error) {
	var c *torch.Model
	var err error
	switch {
	case ck != "":
		c, err = torch.LoadModel(learner.CriticDir(ck), m.dtype, m.device, true)
	case m.cfg.Model.CriticPath != "":
		c, err = torch.LoadModel(m.cfg.Model.CriticPath, m.dtype, m.device, true)
	default:
		c, err = torch.NewRandomModel(policy.Config, m.dtype, m.device, true, uint64(m.cfg.Run.Seed)+1)
		if err == nil {
			err = c.CopyWeightsFrom(policy)
		}
	}
	if err == nil {
		err = m.setMode(c)
	}
	if err != nil {
		c.Free()
		return nil, fmt.Errorf("critic: %w", err)
	}
	return c, nil
}

// LearnerSettings are the run's update settings.
func LearnerSettings(cfg config.Config) learner.Settings {
	a, o := cfg.Algorithm, cfg.Optim
	policy := torch.AdamWGroup{LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, WeightDecay: o.WeightDecay}
	critic := policy
	critic.LR = o.CriticLR
	return learner.Settings{
		Estimator: a.Estimator, Advantage: a.Options,
		FilterKeepRatio: a.FilterKeepRatio, CriticWarmup: a.CriticWarmup,
		Overlong: algo.Overlong{Filter: a.OverlongFilter, Buffer: a.OverlongBuffer.On(), MaxLen: cfg.Env.MaxTokens,
			PenaltyFactor: a.OverlongBuffer.PenaltyFactor},
		Loss: a.LossConfig, Horizon: cfg.Env.MaxTokens, Epochs: a.Epochs, MiniBatch: a.MiniBatch, MicroBatch: a.MicroBatch, LossMask: a.LossMask,
		MaxGradNorm: o.MaxGradNorm, Temperature: cfg.Rollout.Temperature,
		RolloutCorrection: cfg.RolloutCorrection(), RolloutBound: a.RolloutCorrectionBound, OldLogprobs: a.OldLogprobs, RoutingReplay: a.RoutingReplay,
		PolicyOptim: policy, CriticOptim: critic, Zero: cfg.Dist.Zero,
		Schedule: learner.Schedule{Shape: o.Schedule, Warmup: o.WarmupSteps, Total: optimizerSteps(cfg), MinRatio: o.MinLRRatio},
	}
}

// optimizerSteps are the policy optimizer steps of a whole run: per
// iteration, epochs passes over the batch's trajectories in mini-batches.
func optimizerSteps(cfg config.Config) int {
	a, r := cfg.Algorithm, cfg.Rollout
	return cfg.Run.Iterations * a.Epochs * int(math.Ceil(float64(r.BatchSize*r.GroupSize)/float64(a.MiniBatch)))
}

// FreezeReference makes the KL reference a frozen copy of the policy as it
// is now (after the warm start) and saves it with the run, so a resumed
// run uses the same reference. With LoRA the reference is the base, set
// when the models were loaded.
func (m *Set) FreezeReference() error {
	if !m.needsRef() || m.learner.Reference() != nil {
		return nil
	}
	policy := m.learner.Policy()
	ref, err := torch.NewModel(policy.Config, m.dtype, m.device, false)
	if err != nil {
		return err
	}
	if err := m.setMode(ref); err != nil {
		ref.Free()
		return err
	}
	if err := ref.CopyWeightsFrom(policy); err != nil {
		ref.Free()
		return err
	}
	m.learner.SetReference(ref)
	if !m.dist.Leader() {
		return nil
	}
	refDir := filepath.Join(m.dir, "ref")
	if err := os.RemoveAll(refDir); err != nil {
		return err
	}
	if err := ref.Save(refDir); err != nil {
		return err
	}
	return m.tok.Save(refDir)
}

// setMode applies the run's activation checkpointing and mixed precision
// to a model.
func (m *Set) setMode(x *torch.Model) error { return agent.ModeOf(m.cfg).Apply(x) }

// WarmStarted records that the warm start trained WarmStartModel: with
// LoRA the adapters (and a LoRA critic's) sit on the base as it is now;
// a separate critic starts from the warm-started policy.
func (m *Set) WarmStarted() error {
	if m.base != nil {
		m.baseTrained = true
		return nil
	}
	if m.learner.Mode() == learner.SeparateCritic {
		return m.learner.Critic().CopyWeightsFrom(m.learner.Policy())
	}
	return nil
}

// Restore reads the optimizers' state of the checkpoint ck, whose run
// had taken steps policy optimizer steps (the weights were loaded with
// the models).
func (m *Set) Restore(ck string, steps int) error { return m.learner.Load(ck, steps) }

// SyncReplicas makes every rank's trainable weights rank 0's, as DDP does
// at start: the ranks then stay identical because they apply the same
// summed gradients.
func (m *Set) SyncReplicas() error {
	if m.dist.World() == 1 {
		return nil
	}
	return m.dist.Broadcast(m.learner.Params())
}

// AgreeOnWeights checks that every rank still holds the same trainable
// weights (the sum and the sum of squares of each parameter, computed in
// one order whatever the thread count, compared exactly), before rank 0
// saves them for all.
func (m *Set) AgreeOnWeights() error {
	if m.dist.World() == 1 {
		return nil
	}
	params, names := m.learner.Params(), m.learner.ParamNames()
	var keys []string
	var vals []float64
	for i, p := range params {
		a, b, err := p.Checksum()
		if err != nil {
			return err
		}
		keys = append(keys, "sum of "+names[i], "sum of squares of "+names[i])
		vals = append(vals, a, b)
	}
	return m.dist.Agree("the weights", keys, vals)
}
