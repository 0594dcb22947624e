package ppo

import (
	"math/rand/v2"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trajectory"
)

// Config shapes one PPO-style update over an iteration's batch.
type Config struct {
	Loss        algo.LossConfig
	Epochs      int
	MiniBatch   int
	MicroBatch  int
	LossMask    bool
	MaxGradNorm float64
	Temperature float64
	TrainPolicy bool // false during critic warm-up
	// LR gives the learning rates of the optimizer step that follows
	// policySteps earlier policy steps of the run: the schedule advances
	// per optimizer step, not per iteration. Nil leaves them as they are.
	LR func(policySteps int) (policy, critic float64)
	// StepsBefore is the number of policy steps the run took before this
	// update (the schedule's position at its start).
	StepsBefore int
}

// Learner owns the models and optimizers an update changes. Critic is nil
// (no value function), Policy (a value head shared with the policy, trained
// by the policy's optimizer) or a separate model with its own CriticOpt.
// Ref, when not nil, is the frozen reference of the KL term. Dist nil is
// one process.
//
// In a data-parallel job every rank walks the same mini-batches (same data,
// same Rand), computes the gradient of its share of each (normalised by the
// whole mini-batch's token or sequence count), and the all-reduced sum is
// the gradient one process would get from the whole mini-batch; every rank
// then takes the same optimizer step.
type Learner struct {
	Policy, Critic, Ref *torch.Model
	Opt, CriticOpt      *torch.AdamW
	Dist                *dist.Group
	Rand                *rand.Rand // shuffles the mini-batches
	Config              Config
}

func (l *Learner) shared() bool   { return l.Critic != nil && l.Critic == l.Policy }
func (l *Learner) separate() bool { return l.Critic != nil && l.Critic != l.Policy }

// Learn updates on trs, whose advantages and returns are set, for
// Config.Epochs passes of shuffled mini-batches, each split into
// micro-batches whose gradients accumulate before one optimizer step. A
// non-finite loss or gradient norm skips that step (its gradients are
// dropped) and records the mini-batch's trajectory ids.
func (l *Learner) Learn(trs []*trajectory.Trajectory, data Data) (Stats, error) {
	var st Stats
	idx := make([]int, len(trs))
	for i := range idx {
		idx[i] = i
	}
	for epoch := 0; epoch < l.Config.Epochs; epoch++ {
		l.Rand.Shuffle(len(idx), func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
		for lo := 0; lo < len(idx); lo += l.Config.MiniBatch {
			mini := Pick(trs, idx[lo:min(lo+l.Config.MiniBatch, len(idx))])
			// The mini-batch's policy and critic steps share one point of
			// the schedule: the run's policy steps so far.
			if err := l.setLR(&st); err != nil {
				return st, err
			}
			if l.Config.TrainPolicy || l.shared() {
				if err := l.policyStep(mini, data, &st); err != nil {
					return st, err
				}
			}
			if l.separate() {
				if err := l.criticStep(mini, data, &st); err != nil {
					return st, err
				}
			}
		}
	}
	return st, l.finish(&st)
}

// norm is the mini-batch's loss normaliser.
func (l *Learner) norm(mini []*trajectory.Trajectory) algo.Norm {
	n := Norm(mini, l.Config.LossMask)
	n.Horizon = float64(l.Config.Loss.Horizon)
	return n
}

// setLR sets the learning rates of the next optimizer step, the one after
// st.Steps policy steps of this update: the policy's (group 0 of the
// policy optimizer), a shared value head's (its group 1) and a separate
// critic's.
func (l *Learner) setLR(st *Stats) error {
	if l.Config.LR == nil {
		return nil
	}
	lr, clr := l.Config.LR(l.Config.StepsBefore + st.Steps)
	st.LR = lr
	if err := l.Opt.SetLR(0, lr); err != nil {
		return err
	}
	if err := l.Opt.SetLR(1, clr); err != nil {
		return err
	}
	if l.CriticOpt != nil {
		return l.CriticOpt.SetLR(0, clr)
	}
	return nil
}
