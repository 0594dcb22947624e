package trainer

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

// iterationZero evaluates the policy before RL (the "base tool call"
// baseline) and the naive-RAG baseline, on the evaluation split and on the
// out-of-domain one, stored as iteration 0.
func (t *Trainer) iterationZero(ctx context.Context) error {
	m := map[string]float64{}
	sets := t.evalSets(ctx, false)
	if t.cfg.Eval.Baselines && t.agent.Tool(search.SearchName) != nil {
		sets = append(sets, t.evalSets(ctx, true)...)
	}
	all, err := t.evaluateSets(ctx, 0, sets, m)
	if err != nil {
		return err
	}
	t.log.Info().Int("iteration", 0).Float64("eval_em", m[metric.Eval+metric.EM]).Float64("naive_rag_em", m[metric.NaiveRAG+metric.EM]).Msg("baselines evaluated")
	return t.rec.Submit(0, m, all)
}

// evalSet is one evaluation pass: its tasks, the episode factory, the
// prefix of its metrics and the tag in its trajectories' IDs.
type evalSet struct {
	tasks   []envs.Task
	factory rollout.Factory
	prefix  string
	tag     string // "" for the policy on the evaluation split
}

// evalSets are the policy's evaluation passes (rag: the naive-RAG
// baseline's): the evaluation split, then the out-of-domain split when
// the data has one.
func (t *Trainer) evalSets(ctx context.Context, rag bool) []evalSet {
	var f rollout.Factory // nil: the policy's own episodes (see rollouts)
	pre, preOOD, tag := metric.Eval, metric.EvalOOD, ""
	if rag {
		f, pre, preOOD, tag = t.agent.RAGEpisodes(ctx), metric.NaiveRAG, metric.NaiveRAGOOD, "rag"
	}
	sets := []evalSet{{t.data.Eval, f, pre, tag}}
	if len(t.data.OOD) > 0 {
		sets = append(sets, evalSet{t.data.OOD, f, preOOD, strings.TrimPrefix(tag+"-ood", "-")})
	}
	return sets
}

// evaluateSets runs the passes, adds their metrics to m and returns their
// trajectories.
func (t *Trainer) evaluateSets(ctx context.Context, iter int, sets []evalSet, m map[string]float64) ([]*trajectory.Trajectory, error) {
	var all []*trajectory.Trajectory
	for _, s := range sets {
		trs, em, err := t.evaluate(ctx, iter, s)
		if err != nil {
			return nil, err
		}
		for k, v := range em {
			m[k] = v
		}
		all = append(all, trs...)
	}
	return all, nil
}

// evaluate runs greedy (eval temperature) episodes over one evaluation
// pass's tasks (at most eval.max_eval of them).
func (t *Trainer) evaluate(ctx context.Context, iter int, s evalSet) ([]*trajectory.Trajectory, map[string]float64, error) {
	if err := t.batches.ready(); err != nil {
		return nil, nil, err
	}
	tasks := s.tasks
	if n := t.cfg.Eval.MaxEval; n > 0 && n < len(tasks) {
		tasks = tasks[:n]
	}
	if len(tasks) == 0 {
		return nil, map[string]float64{}, nil
	}
	reqs := make([]rollout.Request, len(tasks))
	for i, task := range tasks {
		reqs[i] = rollout.Request{Task: task, Group: i, Samples: 1}
	}
	label := "eval"
	if s.tag != "" {
		label = "eval " + s.tag
	}
	trs, _, err := t.rollouts(ctx, fmt.Sprintf("iter %d %s", iter, label), s.factory, reqs, t.rolloutOptions(iter, trajectory.Eval, rollout.Options{
		Sampling: decoding.Sampling{Temperature: t.cfg.Rollout.EvalTemperature}}))
	if err != nil {
		return nil, nil, err
	}
	if s.tag != "" {
		// The tag goes after the split, keeping the rest (group, sample and
		// a segment's ".k") so every segment's ID stays unique.
		untagged := fmt.Sprintf("%d-%s-", iter, trajectory.Eval)
		for _, tr := range trs {
			tr.ID = untagged + s.tag + "-" + strings.TrimPrefix(tr.ID, untagged)
		}
	}
	return trs, metric.Episodes(s.prefix, trs), nil
}
