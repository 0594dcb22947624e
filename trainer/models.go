package trainer

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/learner"
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

// loadModels loads or creates the policy, the critic and the reference,
// and hands them to the learner, which builds their optimizers.
func (t *Trainer) loadModels(ck string) error {
	if t.cfg.Model.LoRA.On() {
		return t.loadLoRAModels(ck)
	}
	policy, err := t.loadPolicy(ck)
	if err != nil {
		return err
	}
	ref, err := t.loadReference(ck)
	if err != nil {
		policy.Free()
		return err
	}
	var critic *torch.Model
	if t.criticMode() == learner.SeparateCritic {
		if critic, err = t.loadCritic(ck, policy); err != nil {
			policy.Free()
			ref.Free()
			return err
		}
	}
	if t.learner, err = learner.New(policy, critic, t.criticMode(), t.learnerSettings(), t.dist, t.rng); err != nil {
		ref.Free()
		return err
	}
	t.learner.SetReference(ref)
	return nil
}

// criticMode is how the estimator's value function is held: none, a head
// on the policy, or a model of its own (model.critic).
func (t *Trainer) criticMode() learner.CriticMode {
	switch {
	case !t.needsCritic():
		return learner.NoCritic
	case t.sharedCritic():
		return learner.SharedCritic
	}
	return learner.SeparateCritic
}

// loadPolicy reads the policy from the checkpoint or model.path, or
// creates the tiny model of the synthetic world.
func (t *Trainer) loadPolicy(ck string) (*torch.Model, error) {
	var p *torch.Model
	var err error
	shared := t.sharedCritic()
	switch {
	case ck != "":
		p, err = torch.LoadModel(filepath.Join(ck, "policy"), t.dtype, t.device, shared)
	case t.cfg.Model.Path != "":
		p, err = torch.LoadModel(t.cfg.Model.Path, t.dtype, t.device, shared)
	default:
		p, err = torch.NewRandomModel(agent.TinyConfig(t.cfg.Model.Tiny, t.agent.Tokenizer), t.dtype, t.device, shared, uint64(t.cfg.Run.Seed))
		t.fresh = true
	}
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if err := t.setMode(p); err != nil {
		p.Free()
		return nil, err
	}
	if v := t.agent.Tokenizer.VocabSize(); v > p.Config.Vocab {
		p.Free()
		return nil, fmt.Errorf("the tokenizer has %d tokens but the model's vocab_size is %d", v, p.Config.Vocab)
	}
	return p, nil
}

// loadReference reads the KL reference (model.ref_path, or the run's own
// from a checkpoint); nil when there is none yet: freezeReference makes
// it from the policy after the warm start.
func (t *Trainer) loadReference(ck string) (*torch.Model, error) {
	if !t.needsRef() {
		return nil, nil
	}
	var ref *torch.Model
	var err error
	switch {
	case t.cfg.Model.RefPath != "":
		ref, err = torch.LoadModel(t.cfg.Model.RefPath, t.dtype, t.device, false)
	case ck != "":
		// The reference is the initial policy, saved when the run began.
		ref, err = torch.LoadModel(filepath.Join(t.dir, "ref"), t.dtype, t.device, false)
	default:
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reference model: %w", err)
	}
	if err := t.setMode(ref); err != nil {
		ref.Free()
		return nil, err
	}
	return ref, nil
}

// loadCritic reads a separate critic from the checkpoint or
// model.critic_path, or makes one from the policy with a fresh value head.
func (t *Trainer) loadCritic(ck string, policy *torch.Model) (*torch.Model, error) {
	var c *torch.Model
	var err error
	switch {
	case ck != "":
		c, err = torch.LoadModel(learner.CriticDir(ck), t.dtype, t.device, true)
	case t.cfg.Model.CriticPath != "":
		c, err = torch.LoadModel(t.cfg.Model.CriticPath, t.dtype, t.device, true)
	default:
		c, err = torch.NewRandomModel(policy.Config, t.dtype, t.device, true, uint64(t.cfg.Run.Seed)+1)
		if err == nil {
			err = c.CopyWeightsFrom(policy)
		}
	}
	if err == nil {
		err = t.setMode(c)
	}
	if err != nil {
		c.Free()
		return nil, fmt.Errorf("critic: %w", err)
	}
	return c, nil
}

// learnerSettings are the run's update settings.
func (t *Trainer) learnerSettings() learner.Settings {
	cfg := t.cfg
	a, o := cfg.Algorithm, cfg.Optim
	loss := cfg.Loss()
	loss.KLInLoss = a.KLMode == "loss"
	policy := torch.AdamWGroup{LR: o.LR, Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, WeightDecay: o.WeightDecay}
	critic := policy
	critic.LR = o.CriticLR
	return learner.Settings{
		Estimator: a.Estimator, Advantage: a.Options, KLEstimator: a.KLEstimator, KLInReward: a.KLMode == "reward",
		FilterKeepRatio: a.FilterKeepRatio, CriticWarmup: a.CriticWarmup,
		Overlong: algo.Overlong{Filter: a.OverlongFilter, Buffer: a.OverlongBuffer.On(), MaxLen: cfg.Env.MaxTokens,
			PenaltyFactor: a.OverlongBuffer.PenaltyFactor},
		Loss: loss, Epochs: a.Epochs, MiniBatch: a.MiniBatch, MicroBatch: a.MicroBatch, LossMask: a.LossMask,
		MaxGradNorm: o.MaxGradNorm, Temperature: cfg.Rollout.Temperature,
		RolloutCorrection: cfg.RolloutCorrection(), RolloutBound: a.RolloutCorrectionBound, OldLogprobs: a.OldLogprobs,
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

// freezeReference makes the KL reference a frozen copy of the policy as it
// is now (after the warm start) and saves it with the run, so a resumed
// run uses the same reference. With LoRA the reference is the base, set
// when the models were loaded.
func (t *Trainer) freezeReference() error {
	if !t.needsRef() || t.learner.Reference() != nil {
		return nil
	}
	policy := t.learner.Policy()
	ref, err := torch.NewModel(policy.Config, t.dtype, t.device, false)
	if err != nil {
		return err
	}
	if err := t.setMode(ref); err != nil {
		ref.Free()
		return err
	}
	if err := ref.CopyWeightsFrom(policy); err != nil {
		ref.Free()
		return err
	}
	t.learner.SetReference(ref)
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
	return t.agent.Tokenizer.Save(refDir)
}

// setMode applies the run's activation checkpointing and mixed precision
// to a model.
func (t *Trainer) setMode(m *torch.Model) error { return agent.ModeOf(t.cfg).Apply(m) }
