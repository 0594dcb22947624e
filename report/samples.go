package report

import (
	"math"

	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
)

// sample is a trajectory shown in full, with why it was chosen.
type sample struct {
	why     string
	t       *trajectory.Trajectory
	correct bool // the store's match of the answer against the gold answers
}

// pickSamples chooses up to four trajectories to show: from the last
// iteration with eval trajectories the first correct and the first wrong
// one, and from the last iteration with train trajectories the one with
// the highest and the one with the lowest reward.
func pickSamples(s *store.Store, iters []store.IterationMetrics) ([]sample, error) {
	var picks []sample
	seen := map[string]bool{}
	add := func(why string, sums []store.Summary) error {
		if len(sums) == 0 || seen[sums[0].ID] {
			return nil
		}
		t, err := s.Get(sums[0].ID)
		if err != nil {
			return err
		}
		seen[t.ID] = true
		picks = append(picks, sample{why: why, t: t, correct: sums[0].Correct})
		return nil
	}
	if it, ok := lastWith(iters, func(m store.IterationMetrics) int { return m.NEval }); ok {
		for _, c := range []struct{ why, where string }{
			{"evaluation, correct", "correct = 1"},
			{"evaluation, wrong", "correct = 0"},
		} {
			sums, err := s.List(store.ListFilter{Iteration: &it, Split: trajectory.Eval, Where: c.where, Limit: 1})
			if err != nil {
				return nil, err
			}
			if err := add(c.why, sums); err != nil {
				return nil, err
			}
		}
	}
	if it, ok := lastWith(iters, func(m store.IterationMetrics) int { return m.NTrain }); ok {
		sums, err := s.List(store.ListFilter{Iteration: &it, Split: trajectory.Train})
		if err != nil {
			return nil, err
		}
		best, worst := extremes(sums)
		if err := add("training, highest reward", best); err != nil {
			return nil, err
		}
		if err := add("training, lowest reward", worst); err != nil {
			return nil, err
		}
	}
	return picks, nil
}

// lastWith returns the last iteration for which count is positive.
func lastWith(iters []store.IterationMetrics, count func(store.IterationMetrics) int) (int, bool) {
	for i := len(iters) - 1; i >= 0; i-- {
		if count(iters[i]) > 0 {
			return iters[i].Iteration, true
		}
	}
	return 0, false
}

// extremes returns the first summary with the highest reward and the first
// with the lowest (as one-element slices; empty when no reward is finite).
func extremes(sums []store.Summary) (best, worst []store.Summary) {
	for _, m := range sums {
		if math.IsNaN(m.Reward) || math.IsInf(m.Reward, 0) {
			continue
		}
		if best == nil || m.Reward > best[0].Reward {
			best = []store.Summary{m}
		}
		if worst == nil || m.Reward < worst[0].Reward {
			worst = []store.Summary{m}
		}
	}
	return best, worst
}
