package trainer

import (
	"math"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/learner"
)

// The learning-rate schedule advances per optimizer step. The bandit takes
// two optimizer steps per iteration (mini_batch 16 of 32 trajectories);
// with one iteration the linear schedule to min_lr_ratio 0 spans 2 steps,
// so step 0 runs at lr and step 1 at lr * (1 - 1/2). The logged lr is the
// last step's: lr/2, where a per-iteration schedule would log lr.
func TestScheduleAdvancesPerOptimizerStep(t *testing.T) {
	tr := newBandit(t, "grpo", func(c *config.Config) {
		c.Run.Iterations = 1
		c.Optim.Schedule, c.Optim.MinLRRatio = "linear", 0
	})
	trs, _ := banditTrajectories(t, tr, 1)
	m := map[string]float64{}
	if err := tr.learn(1, trs, m); err != nil {
		t.Fatal(err)
	}
	if tr.state.OptSteps != 2 {
		t.Fatalf("%d optimizer steps, want 2", tr.state.OptSteps)
	}
	if want := tr.cfg.Optim.LR / 2; math.Abs(m["lr"]-want) > 1e-12 {
		t.Errorf("lr of the second step %v, want %v", m["lr"], want)
	}
}

// A separate critic's optimizer follows the schedule too: past the end of
// a linear decay to 0 every learning rate is 0, so neither the policy nor
// the critic may move (an unscheduled critic would still step at
// optim.critic_lr).
func TestScheduleReachesSeparateCritic(t *testing.T) {
	tr := newBandit(t, "gae", func(c *config.Config) {
		c.Model.Critic = "separate"
		c.Optim.Schedule, c.Optim.MinLRRatio = "linear", 0
	})
	if tr.models.learner.Mode() != learner.SeparateCritic {
		t.Fatal("the bandit did not get a separate critic")
	}
	// Far past the schedule's end: the run's state as a resume restores it.
	dir := t.TempDir()
	st, err := tr.models.learner.GatherOptimizers()
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.models.learner.Save(dir, st); err != nil {
		t.Fatal(err)
	}
	if err := tr.models.learner.Load(dir, 1<<20); err != nil {
		t.Fatal(err)
	}
	trs, _ := banditTrajectories(t, tr, 1)
	policy, critic := flatWeights(t, tr.models.learner.Policy()), flatWeights(t, tr.models.learner.Critic())
	if err := tr.learn(1, trs, map[string]float64{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(policy, flatWeights(t, tr.models.learner.Policy())) {
		t.Error("the policy moved at learning rate 0")
	}
	if !slices.Equal(critic, flatWeights(t, tr.models.learner.Critic())) {
		t.Error("the separate critic moved at learning rate 0: its optimizer is not scheduled")
	}
}

// The variance filter runs before anything is computed on the batch: with
// filter_keep_ratio 0.5 only the kept half of the 8 groups get advantages
// (and old logprobs and values: gae reads them), the dropped groups'
// trajectories are left as the rollout made them.
func TestVarianceFilterComesFirst(t *testing.T) {
	tr := newBandit(t, "gae", func(c *config.Config) { c.Algorithm.FilterKeepRatio = 0.5 })
	trs, _ := banditTrajectories(t, tr, 1)
	m := map[string]float64{}
	if err := tr.learn(1, trs, m); err != nil {
		t.Fatal(err)
	}
	if m["groups_dropped"] != banditGroups/2 {
		t.Fatalf("%v groups dropped, want %d", m["groups_dropped"], banditGroups/2)
	}
	withAdv, withValues := 0, 0
	for _, x := range trs {
		if x.Advantages != nil {
			withAdv++
		}
		if x.Values != nil {
			withValues++
		}
	}
	if want := banditGroups / 2 * banditSamples; withAdv != want || withValues != want {
		t.Errorf("%d trajectories with advantages and %d with values, want only the %d kept", withAdv, withValues, want)
	}
}
