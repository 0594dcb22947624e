package trainer

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/episodes"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

// rollouts runs this rank's share of reqs (every World-th request, from
// its Rank-th) and gathers every rank's trajectories and stats, so each
// rank holds the whole batch, ordered by group and sample. f nil plays the
// policy's own episodes: the agent program's (agent.command) through the
// gateway, else the agent's ToolEnv ones. With rollout.engine vllm they
// sample on the vLLM server (rollout.VLLMRollouts), else on the built-in engine. A batch in which every episode
// failed (a broken tool, an env that cannot start, an agent program that
// crashes) is an error naming the first failure: there is nothing to learn
// from or evaluate, and every rank stops alike.
func (t *Trainer) rollouts(ctx context.Context, label string, f rollout.Factory, reqs []rollout.Request, o rollout.Options) ([]*trajectory.Trajectory, rollout.Stats, error) {
	trs, rs, err := t.share(ctx, label, f, reqs, o)
	if err != nil {
		return nil, rs, err
	}
	return t.gather(label, trs, rs, o.Version == nil)
}

// share runs this rank's share of reqs (rollouts) and returns its
// trajectories, in the order they finished, without gathering the other
// ranks'.
func (t *Trainer) share(ctx context.Context, label string, f rollout.Factory, reqs []rollout.Request, o rollout.Options) ([]*trajectory.Trajectory, rollout.Stats, error) {
	mine := dist.Shard(t.dist, reqs)
	n := 0
	for _, r := range mine {
		n += r.Samples
	}
	dec, release := t.batches.decoder()
	defer release()
	bar := t.bar(label, n)
	o.OnDone = func(*trajectory.Trajectory) { bar.Add(1) }
	var trs []*trajectory.Trajectory
	var rs rollout.Stats
	var err error
	switch {
	case t.vllm != nil && f == nil:
		trs, rs, err = t.vllm.Run(ctx, t.agent.Chat, t.episode, mine, o)
	case t.vllm != nil:
		trs, rs, err = t.vllm.Run(ctx, t.agent.Chat, f, mine, o)
	case f == nil && t.program != nil:
		trs, rs, err = t.program.Rollout(ctx, dec, mine, o)
	case f == nil:
		trs, rs, err = rollout.Run(ctx, dec, t.agent.Chat, t.episode, mine, o)
	default:
		trs, rs, err = rollout.Run(ctx, dec, t.agent.Chat, f, mine, o)
	}
	bar.Done()
	return trs, rs, err
}

// gather collects every rank's share of a batch (a collective: every rank
// calls it at the same point) and checks that not all of its episodes
// failed. oneVersion says the batch was sampled by the synchronous loop,
// which samples every turn of an episode with the policy it started with;
// the asynchronous one's turns keep the versions the scheduler recorded
// (rollout.Options.Version).
func (t *Trainer) gather(label string, trs []*trajectory.Trajectory, rs rollout.Stats, oneVersion bool) ([]*trajectory.Trajectory, rollout.Stats, error) {
	trs, rs, err := episodes.Gather(t.dist, trs, rs)
	if err != nil {
		return nil, rs, err
	}
	if oneVersion {
		for _, tr := range trs {
			for i := range tr.Turns {
				tr.Turns[i].PolicyVersion = tr.PolicyVersion
			}
		}
	}
	if episodes.AllFailed(trs) {
		return nil, rs, fmt.Errorf("%s: every one of its %d episodes failed, the first with: %s", label, len(trs), trs[0].Error)
	}
	return trs, rs, nil
}

// rolloutOptions completes o with the run's episode limits, seed and
// determinism, and the iteration, split and policy version it samples for.
func (t *Trainer) rolloutOptions(iter int, split trajectory.Split, o rollout.Options) rollout.Options {
	o.MaxTurnTokens = t.cfg.Env.MaxTurnTokens
	o.MaxTotalTokens = t.cfg.Env.MaxTokens
	o.Seed = uint64(t.cfg.Run.Seed)
	o.Iteration = iter
	t.batches.stamp(&o)
	o.Split = split
	o.Deterministic = t.cfg.Rollout.Deterministic
	return o
}
