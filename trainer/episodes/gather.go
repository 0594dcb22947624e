// Package episodes holds what the trainer does with a batch of finished
// episodes before learning from it: gathering every rank's share in one
// order and telling whether all of them failed (what they measure is
// metric.Episodes).
package episodes

import (
	"sort"

	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

// Gather gives every rank all ranks' trajectories, ordered by group
// and sample (in one process too: the order in which trajectories finish
// depends on timing, and the update's shuffles must not), and their merged
// rollout stats.
func Gather(g *dist.Group, trs []*trajectory.Trajectory, rs rollout.Stats) ([]*trajectory.Trajectory, rollout.Stats, error) {
	all, stats := trs, rs
	if g.World() > 1 {
		type share struct {
			Trs   []*trajectory.Trajectory
			Stats rollout.Stats
		}
		parts, err := dist.Gather(g, share{trs, rs})
		if err != nil {
			return nil, rs, err
		}
		all, stats = parts[0].Trs, parts[0].Stats
		for _, p := range parts[1:] {
			all = append(all, p.Trs...)
			stats = stats.Merge(p.Stats)
		}
	}
	sort.SliceStable(all, func(a, b int) bool {
		if all[a].Group != all[b].Group {
			return all[a].Group < all[b].Group
		}
		return all[a].Sample < all[b].Sample
	})
	return all, stats, nil
}

// AllFailed reports whether trs holds episodes and every one of them
// failed (an error, or an agent program's failure).
func AllFailed(trs []*trajectory.Trajectory) bool {
	for _, tr := range trs {
		if !tr.Stop.Failed() {
			return false
		}
	}
	return len(trs) > 0
}
