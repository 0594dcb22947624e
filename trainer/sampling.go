package trainer

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/synth"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/datasets"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

// trainingEpisodes samples an iteration's training episodes: one draw of
// rollout.batch_size prompts, group_size samples each; with
// algorithm.dynamic_sampling, DAPO's draws until the batch has its
// informative groups (algo.DynamicSample), every episode drawn returned
// (those left out marked Dropped, which the store keeps) with the draws'
// merged rollout stats. The prompts come from src. Every rank draws the
// same prompts and, holding the whole gathered batch, makes the same
// choices (with src.share, one draw of this rank's share: config.Validate
// refuses dynamic sampling there).
func (t *Trainer) trainingEpisodes(ctx context.Context, iter int, src taskSource) ([]*trajectory.Trajectory, rollout.Stats, algo.Drawn, error) {
	var rs rollout.Stats
	draw := func(d int) ([]*trajectory.Trajectory, error) {
		label := fmt.Sprintf("iter %d rollout", iter)
		if d > 0 {
			label = fmt.Sprintf("iter %d rollout (draw %d)", iter, d+1)
		}
		trs, s, err := t.draw(ctx, iter, d, label, src)
		if d == 0 {
			rs = s
		} else {
			rs = rs.Then(s)
		}
		return trs, err
	}
	a := t.cfg.Algorithm
	if !a.DynamicSampling {
		trs, err := draw(0)
		return trs, rs, algo.Drawn{Episodes: trs, Draws: 1}, err
	}
	// Before each further draw: say so, and end the drawing once a stop is
	// asked (every rank the same: each draws in step with the others).
	more := func(d algo.Drawn) (bool, error) {
		stop := t.stop.asked()
		if !src.share {
			var err error
			if stop, err = t.dist.Any(stop); err != nil {
				return false, err
			}
		}
		if stop {
			t.log.Warn().Int("iteration", iter).Int("draws", d.Draws).Int("informative_groups", d.Informative).
				Msg("dynamic sampling: a stop was asked; the update learns from the informative groups drawn so far")
			return false, nil
		}
		t.log.Info().Int("iteration", iter).Int("draw", d.Draws+1).Int("of", a.MaxNumGenBatches).Int("informative_groups", d.Informative).
			Int("want", t.cfg.Rollout.BatchSize).Int("zero_variance_groups", d.ZeroVariance).Msg("dynamic sampling: drawing more prompts")
		return true, nil
	}
	drawn, err := algo.DynamicSample(t.cfg.Rollout.BatchSize, a.MaxNumGenBatches, draw, more)
	if err != nil {
		return nil, rs, drawn, err
	}
	if drawn.Informative < t.cfg.Rollout.BatchSize && !drawn.Stopped {
		t.log.Warn().Int("iteration", iter).Int("draws", drawn.Draws).Int("informative_groups", drawn.Informative).
			Int("want", t.cfg.Rollout.BatchSize).Msg("dynamic sampling reached algorithm.max_num_gen_batches: the update learns from fewer groups")
	}
	return drawn.Episodes, rs, drawn, nil
}

// draw samples the d-th draw of an iteration: the next rollout.batch_size
// training prompts (with fresh worlds, the questions of the draw's own
// world), group_size samples each, its groups numbered on from the earlier
// draws'.
func (t *Trainer) draw(ctx context.Context, iter, d int, label string, src taskSource) ([]*trajectory.Trajectory, rollout.Stats, error) {
	r := t.cfg.Rollout
	var tasks []envs.Task
	if f := t.data.Fresh; f != nil {
		w, _, done, err := f.Open(ctx, t.agent, synth.RoleTrain, datasets.TrainWorld(iter, d))
		if err != nil {
			return nil, rollout.Stats{}, err
		}
		defer func() {
			if err := done(); err != nil {
				t.log.Warn().Err(err).Msg("drop a batch's world")
			}
		}()
		tasks = w.Train
	} else {
		tasks = src.pos.next(t.data.Train, src.perm, r.BatchSize)
	}
	reqs := make([]rollout.Request, len(tasks))
	for i, task := range tasks {
		reqs[i] = rollout.Request{Task: task, Group: d*r.BatchSize + i, Samples: r.GroupSize}
	}
	o := t.rolloutOptions(iter, trajectory.Train, rollout.Options{
		Sampling: decoding.Sampling{Temperature: r.Temperature, TopK: r.TopK, TopP: r.TopP}, RecordRouting: t.cfg.Algorithm.RoutingReplay})
	run := t.rollouts
	if src.share {
		run = t.share
	}
	trs, rs, err := run(ctx, label, nil, reqs, o)
	if err != nil || !t.cfg.Algorithm.NearMiss {
		return trs, rs, err
	}
	// Near-miss continuations (algorithm.near_miss), in the draw's world.
	var more []rollout.Request
	for _, m := range algo.NearMisses(trs) {
		more = append(more, rollout.Request{Task: reqs[m.Episode.Group-d*r.BatchSize].Task, Group: m.Episode.Group,
			Samples: t.cfg.Algorithm.NearMissSamples, Prefix: &rollout.Prefix{Episode: m.Episode, Turns: m.Turns, FirstSample: r.GroupSize}})
	}
	if len(more) == 0 {
		return trs, rs, nil
	}
	cont, cs, err := run(ctx, label+" near misses", nil, more, o)
	return append(trs, cont...), rs.Then(cs), err
}

// taskSource is where an iteration's training prompts come from: the data
// position its draws move on, and the shuffle of each new pass.
type taskSource struct {
	pos  *dataPos
	perm func(pass, n int) []int
	// share: each draw is this rank's share of its prompts, not gathered
	// (the rollout role of a data-parallel job, whose batches the learning
	// role gathers: collectives stay on one goroutine).
	share bool
}
