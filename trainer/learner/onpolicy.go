package learner

import (
	"fmt"

	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trajectory"
)

// oldFromStep says whether an update of train takes PPO's old logprobs
// from the training forward of its optimizer step instead of recomputing
// them, without gradients, in a pass of their own before it (as TRL's
// GRPOTrainer does with num_iterations 1). That is exact when the policy
// that computes the old logprobs is the one of the training forward, and
// nothing needs them before that forward:
//
//   - the setting is not "recompute";
//   - one epoch of one mini-batch covering the whole batch: the batch is
//     learned in exactly one optimizer step, taken from the weights the
//     recompute would use;
//   - the policy trains (not the critic's warm-up, whose steps run no
//     policy loss to take them from);
//   - no rollout correction: its weights are computed from the old
//     logprobs before the step;
//   - no KL to a reference in the rewards: the advantages, computed before
//     the step, include it, and it is computed from the old logprobs;
//   - no LoRA dropout: the training forward drops inputs of the adapters
//     at random, the recompute does not.
//
// The advantage estimators (trainer/algo) read the rewards, the values and
// that KL only, so nothing else needs the old logprobs before the step.
// The ratio at the step is then exactly 1, as it is with the recompute up
// to floating-point noise.
func (l *Learner) oldFromStep(train []*trajectory.Trajectory, trainPolicy bool) bool {
	s := l.s
	lora := l.policy.LoRA()
	return s.OldLogprobs != "recompute" && s.Epochs == 1 && s.MiniBatch >= len(train) && trainPolicy &&
		(s.RolloutCorrection == "" || s.RolloutCorrection == "off") && !(s.KLInReward && l.ref != nil) &&
		(lora == nil || lora.Dropout == 0)
}

// oldRows are a trajectory's old logprobs and entropies, by its index in
// the batch, as a rank's training forwards computed them.
type oldRows struct {
	I        int
	Old, Ent []float32
}

// gatherOld hands every rank the old logprobs (and entropies) that each
// rank's training forwards set on its shard of the batch (dist.Shard), so
// that after a step that took them (oldFromStep) every trajectory has
// them on every rank. It fails naming a trajectory that got none.
func (l *Learner) gatherOld(train []*trajectory.Trajectory, data TokenTable) error {
	if l.dist.World() > 1 {
		var mine []oldRows
		for i, t := range train {
			if data[t].Old != nil {
				mine = append(mine, oldRows{I: i, Old: data[t].Old, Ent: t.Entropies})
			}
		}
		parts, err := dist.Gather(l.dist, mine)
		if err != nil {
			return fmt.Errorf("gather the old logprobs: %w", err)
		}
		for _, rows := range parts {
			for _, r := range rows {
				t := train[r.I]
				data[t].Old = r.Old
				t.TrainLogprobs, t.Entropies = onActions(t, r.Old), r.Ent
			}
		}
	}
	for _, t := range train {
		if data[t].Old == nil {
			return fmt.Errorf("trajectory %s: the training step computed no old logprobs", t.ID)
		}
	}
	return nil
}
