package trainer

import (
	"testing"

	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/learner"
	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trajectory"
)

// Overlong filtering through the learner: the bandit's first group's
// samples 0 and 1 are marked as cut by the token budget. They keep their
// place in the group's advantages (computed from all four rewards), but
// the losses see only the other 30 trajectories: 30 loss tokens (one
// sampled token each) and 2 masked.
func TestOverlongFilterMasksTruncated(t *testing.T) {
	tr := newBandit(t, "grpo", func(c *config.Config) { c.Algorithm.OverlongFilter = true })
	trs, _ := banditTrajectories(t, tr, 1)
	// A group with differing rewards, so that its advantages are not all 0.
	trs[0].Outcome, trs[0].Reward = 1, 1
	trs[1].Outcome, trs[1].Reward = 0, 0
	trs[0].Stop, trs[1].Stop = trajectory.StopMaxTokens, trajectory.StopMaxTokens
	r, err := tr.models.learner.Update(1, learner.NewBatch(trs, tr.cfg.Algorithm.PackSegments))
	if err != nil {
		t.Fatal(err)
	}
	if r.OverlongMasked != 2 || len(r.Trained) != len(trs)-2 || r.Tokens != len(trs)-2 {
		t.Errorf("%d masked, %d trained, %d loss tokens; want 2, %d, %d", r.OverlongMasked, len(r.Trained), r.Tokens, len(trs)-2, len(trs)-2)
	}
	for _, x := range r.Trained {
		if x == trs[0] || x == trs[1] {
			t.Errorf("%s was learned from", x.ID)
		}
	}
	if trs[0].Advantages == nil || trs[0].Advantages[banditLen-1] <= 0 || trs[1].Advantages[banditLen-1] >= 0 {
		t.Errorf("the masked episodes' advantages %v, %v: want them computed with their group (+ for reward 1, - for 0)", trs[0].Advantages, trs[1].Advantages)
	}
	m := map[string]float64{}
	if err := tr.learn(2, trs, m); err != nil {
		t.Fatal(err)
	}
	if m[metric.OverlongMasked] != 2 {
		t.Errorf("metric overlong_masked %v, want 2", m[metric.OverlongMasked])
	}
}

// The soft overlong penalty through learn: the bandit's budget is 3
// tokens, with L = 2 the penalty starts after 1 token; every episode is 3
// tokens long, so (1-3)/2 = -1 of penalty_factor 0.5: each reward falls
// by 0.5, and the metric reports the mean -0.5.
func TestOverlongPenaltyInLearn(t *testing.T) {
	tr := newBandit(t, "grpo", func(c *config.Config) {
		c.Algorithm.OverlongBuffer = config.OverlongBufferConfig{Enable: true, Len: 2, PenaltyFactor: 0.5}
	})
	trs, _ := banditTrajectories(t, tr, 1)
	before := make([]float64, len(trs))
	for i, x := range trs {
		before[i] = x.Reward
	}
	m := map[string]float64{}
	if err := tr.learn(1, trs, m); err != nil {
		t.Fatal(err)
	}
	if m[metric.OverlongPenalty] != -0.5 {
		t.Errorf("mean penalty %v, want -0.5", m[metric.OverlongPenalty])
	}
	for i, x := range trs {
		if x.Reward != before[i]-0.5 || x.Components[algo.OverlongPenaltyComponent] != -0.5 {
			t.Fatalf("%s: reward %v (component %v), want %v", x.ID, x.Reward, x.Components, before[i]-0.5)
		}
	}
}
