package trainer

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/learner"
	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trajectory"
)

// staleBandit is the bandit trainer (RLOO) of an asynchronous job,
// rollout.max_staleness 1, with algorithm.rollout_correction at its
// default ("") or as named.
func staleBandit(t *testing.T, correction string) *Trainer {
	t.Helper()
	return newBandit(t, "rloo", func(c *config.Config) {
		c.Rollout.MaxStaleness = 1
		if correction != "" {
			c.Algorithm.RolloutCorrection = correction
		}
	})
}

// staleBatch is four of the trainer's own sampled episodes, the first two
// of groups 0 and 1, rewarded 1 then 0 in each group, so that RLOO gives
// them the advantages +1, -1, +1, -1 (n/(n-1) (r - mean) with n = 2).
// Each has one action token; its behaviour logprob is set to the current
// policy's logprob of that token (the old policy the update recomputes)
// minus logRatio[i]: a turn that older weights sampled with probability
// pi_old / exp(logRatio[i]), so that its ratio pi_old/pi_behaviour is
// exp(logRatio[i]). logRatio 0 is a fresh turn.
func staleBatch(t *testing.T, tr *Trainer, logRatio [4]float64) []*trajectory.Trajectory {
	t.Helper()
	sampled, _ := banditTrajectories(t, tr, 1)
	var trs []*trajectory.Trajectory
	for g := 0; g < 2; g++ {
		n := 0
		for _, x := range sampled {
			if x.Group == g && n < 2 {
				x.Outcome = float64(1 - n)
				x.Reward = x.Outcome
				trs = append(trs, x)
				n++
			}
		}
	}
	old, err := learner.TokenLogprobs(nil, tr.models.learner.Policy(), trs, tr.cfg.Rollout.Temperature, 4)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range trs {
		for j, m := range x.Mask {
			if m == 1 {
				x.Logprobs[j] = old[i][j] - float32(logRatio[i])
			}
		}
	}
	return trs
}

// staleUpdate learns one update of tr from staleBatch(logRatio) and
// returns its metrics.
func staleUpdate(t *testing.T, tr *Trainer, logRatio [4]float64) map[string]float64 {
	t.Helper()
	m := map[string]float64{}
	if err := tr.learn(1, staleBatch(t, tr, logRatio), m); err != nil {
		t.Fatal(err)
	}
	return m
}

// With rollout.max_staleness 1 the default correction weighs each stale
// token by its own ratio pi_old/pi_behaviour, truncated at C = 2, and
// leaves fresh tokens as they are; algorithm.rollout_correction off
// weighs nothing. In one update from the sampling weights PPO's ratio to
// the old policy is 1, so a token's policy loss is -w A (token mean over
// the 4 action tokens) and its gradient w times that of -A log pi:
//
//   - stale ratios 4 and 0.8 on the episodes of advantage +1 and -1, the
//     other two fresh: weights min(4, 2) = 2, 1, 1, 0.8 (mean 1.2); the
//     loss -(2 - 1 + 1 - 0.8)/4 = -0.3 with the correction, -(1 - 1 +
//     1 - 1)/4 = 0 without;
//   - every token stale with ratio 1.5: every weight 1.5, so the gradient
//     (and its norm) is 1.5 times the uncorrected one;
//   - every token fresh: weights 1, the same loss and gradient as
//     without the correction.
func TestStaleTurnsCorrectedByDefault(t *testing.T) {
	mixed := [4]float64{math.Log(4), 0, 0, math.Log(0.8)}
	on, off := staleUpdate(t, staleBandit(t, ""), mixed), staleUpdate(t, staleBandit(t, "off"), mixed)
	if w, ok := on[metric.RolloutWeightMean]; !ok || math.Abs(w-1.2) > 1e-6 {
		t.Errorf("default correction at max_staleness 1: mean weight %v (present %v), want 1.2", w, ok)
	}
	if w, ok := off[metric.RolloutWeightMean]; ok {
		t.Errorf("rollout_correction off: mean weight %v reported, want none", w)
	}
	if got := on[metric.PolicyLoss]; math.Abs(got-(-0.3)) > 1e-6 {
		t.Errorf("policy loss with stale ratios 4 and 0.8: %v, want -0.3", got)
	}
	if got := off[metric.PolicyLoss]; math.Abs(got) > 1e-6 {
		t.Errorf("policy loss uncorrected: %v, want 0", got)
	}
	for _, m := range []map[string]float64{on, off} { // the telemetry sees the stale tokens either way
		if math.Abs(m[metric.MismatchRatioMax]-4) > 1e-5 || math.Abs(m[metric.MismatchRatioMin]-0.8) > 1e-6 || m[metric.MismatchBeyond] != 0.25 {
			t.Errorf("mismatch ratios [%v, %v], %v beyond [1/2, 2]; want [0.8, 4] and 0.25",
				m[metric.MismatchRatioMin], m[metric.MismatchRatioMax], m[metric.MismatchBeyond])
		}
	}

	stale := [4]float64{math.Log(1.5), math.Log(1.5), math.Log(1.5), math.Log(1.5)}
	on, off = staleUpdate(t, staleBandit(t, ""), stale), staleUpdate(t, staleBandit(t, "off"), stale)
	if math.Abs(on[metric.RolloutWeightMean]-1.5) > 1e-6 {
		t.Errorf("every token stale by 1.5: mean weight %v, want 1.5", on[metric.RolloutWeightMean])
	}
	if g, g0 := on[metric.GradNorm], off[metric.GradNorm]; !(g0 > 0) || math.Abs(g/g0-1.5) > 1e-5 {
		t.Errorf("every token stale by 1.5: gradient norm %v with the correction, %v without: ratio %v, want 1.5", g, g0, g/g0)
	}

	fresh := [4]float64{}
	on, off = staleUpdate(t, staleBandit(t, ""), fresh), staleUpdate(t, staleBandit(t, "off"), fresh)
	if math.Abs(on[metric.RolloutWeightMean]-1) > 1e-6 {
		t.Errorf("fresh tokens: mean weight %v, want 1", on[metric.RolloutWeightMean])
	}
	if g, g0 := on[metric.GradNorm], off[metric.GradNorm]; !(g0 > 0) || math.Abs(g/g0-1) > 1e-5 ||
		math.Abs(on[metric.PolicyLoss]-off[metric.PolicyLoss]) > 1e-6 {
		t.Errorf("fresh tokens: gradient norm %v and loss %v with the correction, %v and %v without; want equal",
			g, on[metric.PolicyLoss], g0, off[metric.PolicyLoss])
	}
}
