package learner

import (
	"fmt"
	"math/rand/v2"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/dist"
)

// CriticMode says whether a value function is learned, and where.
type CriticMode int

// The critic modes.
const (
	NoCritic       CriticMode = iota // no value function (GRPO, RLOO, REINFORCE++)
	SharedCritic                     // a value head on the policy, trained by the policy's optimizer
	SeparateCritic                   // a model of its own with its own optimizer
)

// Settings shape every update of a run.
type Settings struct {
	Estimator       string        // the advantage estimator (algo.Get)
	Advantage       algo.Options  // its options, KLCoef the weight of the KL to the reference
	FilterKeepRatio float64       // the share of groups the variance filter keeps
	Overlong        algo.Overlong // DAPO's overlong filtering and soft punishment
	CriticWarmup    int           // the first iterations train the critic alone

	// Loss is the losses' settings, as the config has them: KLMode puts
	// the KL to the reference (KLEstimator's) in the loss or the rewards.
	Loss algo.LossConfig
	// Horizon is the constant token count that seq-mean-token-sum-norm
	// divides by (env.max_tokens).
	Horizon    int
	Epochs     int
	MiniBatch  int
	MicroBatch int
	LossMask   bool
	// MaxGradNorm clips the gradient norm of every optimizer step.
	MaxGradNorm float64
	Temperature float64 // the sampling temperature, at which logprobs are recomputed

	// RolloutCorrection corrects the policy-gradient term for the rollout
	// engine's distribution differing from the training forward's: "off"
	// (or ""), "tis", "tis_seq", "mis" or "mis_seq" (algo.RolloutWeights).
	RolloutCorrection string
	// RolloutBound is its bound C (> 1), also the bound the mismatch
	// telemetry counts tokens beyond.
	RolloutBound float64
	// OldLogprobs is "recompute" to recompute PPO's old logprobs in a
	// pass of their own before every update; otherwise ("auto", "") an
	// on-policy update takes them from its training forward (oldFromStep).
	OldLogprobs string
	// RoutingReplay makes the policy's training forwards (the old
	// logprobs' and the update's) route each token to the experts the
	// rollout recorded for it (Trajectory.Routing; routing replay).
	RoutingReplay bool

	// PolicyOptim is the policy's AdamW group; CriticOptim a value head's
	// (a second group of the policy's optimizer when shared) or a separate
	// critic's.
	PolicyOptim, CriticOptim torch.AdamWGroup
	// Zero is the ZeRO stage of the optimizers in a data-parallel job
	// (dist.zero): 0 whole state on every rank, 1 sharded masters and
	// moments, 2 reduce-scattered gradients too.
	Zero int
	// Schedule gives the learning rates (of PolicyOptim's and
	// CriticOptim's LR) at each optimizer step of the run: it advances per
	// optimizer step, not per iteration. The zero Schedule is constant.
	Schedule Schedule
}

// Learner owns the models and optimizers that updates change. In a
// data-parallel job every rank walks the same mini-batches (same data,
// same Rand), computes the gradient of its share of each (normalised by
// the whole mini-batch's token or sequence count), and the all-reduced sum
// is the gradient one process would get from the whole mini-batch; every
// rank then takes the same optimizer step.
type Learner struct {
	policy, critic, ref *torch.Model
	mode                CriticMode
	opt, criticOpt      *torch.AdamW
	params, criticParam []*torch.Tensor
	dist                *dist.Group // nil: one process
	rand                *rand.Rand  // shuffles the mini-batches
	s                   Settings
	steps               int // policy optimizer steps taken (the schedule's position)
}

// New makes the learner of policy and critic (nil unless mode is
// SeparateCritic; a shared critic is the policy's value head) and their
// optimizers. It owns the models from then on.
func New(policy, critic *torch.Model, mode CriticMode, s Settings, g *dist.Group, rng *rand.Rand) (*Learner, error) {
	l := &Learner{policy: policy, mode: mode, dist: g, rand: rng, s: s}
	switch mode {
	case SharedCritic:
		l.critic = policy
	case SeparateCritic:
		if critic == nil {
			return nil, fmt.Errorf("learner: a separate critic needs a critic model")
		}
		l.critic = critic
	}
	if err := l.buildOptimizers(); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// buildOptimizers makes AdamW for the policy (its value head, when shared,
// in a second group at the critic's learning rate) and for a separate
// critic, and hands them the data-parallel group.
func (l *Learner) buildOptimizers() error {
	var err error
	if l.params, err = l.policy.Params(); err != nil {
		return err
	}
	groups := make([]int, len(l.params))
	for i, n := range l.policy.Names() {
		if torch.IsValueHead(n) {
			groups[i] = 1
		}
	}
	if l.opt, err = torch.NewAdamW(l.params, groups, []torch.AdamWGroup{l.s.PolicyOptim, l.s.CriticOptim}); err != nil {
		return err
	}
	if err := l.dist.ShardOptimizer(l.opt, l.s.Zero); err != nil {
		return err
	}
	if l.mode != SeparateCritic {
		return nil
	}
	if l.criticParam, err = l.critic.Params(); err != nil {
		return err
	}
	if l.criticOpt, err = torch.NewAdamW(l.criticParam, nil, []torch.AdamWGroup{l.s.CriticOptim}); err != nil {
		return err
	}
	return l.dist.ShardOptimizer(l.criticOpt, l.s.Zero)
}

// Close frees the optimizers and the models.
func (l *Learner) Close() {
	if l == nil {
		return
	}
	for _, p := range append(l.params, l.criticParam...) {
		p.Free()
	}
	l.params, l.criticParam = nil, nil
	l.opt.Free()
	l.criticOpt.Free()
	if l.mode == SeparateCritic {
		l.critic.Free()
	}
	l.ref.Free()
	l.policy.Free()
	l.policy, l.critic, l.ref = nil, nil, nil
}

// Policy is the model being trained.
func (l *Learner) Policy() *torch.Model { return l.policy }

// Critic is the value function: nil, the policy (shared) or a model of
// its own.
func (l *Learner) Critic() *torch.Model { return l.critic }

// Mode says how the critic is held.
func (l *Learner) Mode() CriticMode { return l.mode }

// Reference is the frozen policy of the KL term, nil when there is none.
func (l *Learner) Reference() *torch.Model { return l.ref }

// SetReference hands the learner the frozen reference of the KL term (it
// owns it from then on). With a reference the KL is measured, and added to
// the rewards or the loss as the settings say.
func (l *Learner) SetReference(ref *torch.Model) { l.ref = ref }

// OptimizerStep names how the policy's AdamW steps: "fused" (libtorch's
// multi-tensor at::_fused_adamw_, torch.AdamW.Fused) or "loop"
// (elementwise ops per parameter, where libtorch lacks the kernel).
func (l *Learner) OptimizerStep() (string, error) {
	fused, err := l.opt.Fused()
	if fused {
		return "fused", err
	}
	return "loop", err
}

// Steps is the number of policy optimizer steps taken so far.
func (l *Learner) Steps() int { return l.steps }

// Params are the tensors updates change, the policy's then a separate
// critic's (shared handles: the caller must not free them). Data-parallel
// ranks broadcast and compare them.
func (l *Learner) Params() []*torch.Tensor {
	return append(append([]*torch.Tensor{}, l.params...), l.criticParam...)
}

// ParamNames name Params in order.
func (l *Learner) ParamNames() []string {
	names := l.policy.Names()
	if l.mode == SeparateCritic {
		names = append(names, l.critic.Names()...)
	}
	return names
}

// Optimizers are the policy's AdamW and a separate critic's (nil
// otherwise), for tests that read their state.
func (l *Learner) Optimizers() (policy, critic *torch.AdamW) { return l.opt, l.criticOpt }
