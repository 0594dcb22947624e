package trainer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/synth"
	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trainer/config"
)

// freshWorlds are a run's fresh worlds (data.synthetic.fresh_worlds): a
// world of its own for every training batch and for every
// rollout.batch_size demonstrations of the warm start, and eval_worlds
// more that hold the evaluation questions. Each world is drawn from the
// world seed, its role and its number (synth.Fresh), so a rerun or a
// resume draws the same ones.
type freshWorlds struct {
	gen   *synth.Fresh
	dir   string // where the worlds' search indexes are built
	batch int    // questions of a training or demonstration world
}

// trainWorld is the number of the world of an iteration's d-th draw:
// 100·iteration + d (a draw is below algorithm.max_num_gen_batches, at
// most 100), so world train-1203 is iteration 12's fourth draw.
func trainWorld(iter, d int) uint64 { return uint64(iter)*100 + uint64(d) }

// build generates world n of role r with questions in-domain and ood
// out-of-domain questions and builds its search index, returning the
// world, its ID and the index's path.
func (f *freshWorlds) build(ctx context.Context, r synth.Role, n uint64, questions, ood int) (*synth.World, string, string, error) {
	w, err := f.gen.World(r, n, questions, ood)
	if err != nil {
		return nil, "", "", err
	}
	id := synth.ID(r, n)
	path := filepath.Join(f.dir, id+".db")
	if err := search.BuildIndex(ctx, path, w.Passages, nil); err != nil {
		return nil, "", "", fmt.Errorf("build the index of world %s: %w", id, err)
	}
	return w, id, path, nil
}

// loadFresh draws a fresh-worlds run's evaluation worlds and builds their
// indexes under runDir/worlds: the test questions (data.synthetic.questions
// x test_fraction) and the out-of-domain ones spread over eval_worlds
// test worlds, or with eval.split validation the validation questions over
// as many validation worlds. The vocabulary world (its texts, renamed over
// the name pool, make the word-level tokenizer) is the datasets' world,
// its index the agent's own. There is no training split: every batch
// draws its world (batchWorld).
func loadFresh(ctx context.Context, cfg config.Config, runDir string) (*datasets, error) {
	sc := cfg.Data.Synthetic
	gen, err := synth.NewFresh(synth.Config{Seed: int64(sc.Seed), Relations: sc.Relations, Entities: sc.Entities,
		MaxHops: sc.MaxHops, OODQuestions: sc.OODQuestions})
	if err != nil {
		return nil, err
	}
	f := &freshWorlds{gen: gen, dir: filepath.Join(runDir, "worlds"), batch: cfg.Rollout.BatchSize}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return nil, err
	}
	d := &datasets{fresh: f, worlds: map[string]string{}}
	if d.world, _, d.indexPath, err = f.build(ctx, synth.RoleVocab, 0, sc.Questions, sc.OODQuestions); err != nil {
		return nil, err
	}
	role, in, ood := synth.RoleTest, int(float64(sc.Questions)*sc.TestFraction+0.5), sc.OODQuestions
	if cfg.Eval.Split == "validation" { // the out-of-domain questions are test data: not drawn
		role, in, ood = synth.RoleVal, sc.ValQuestions, 0
	}
	n := sc.EvalWorlds
	for j := range n {
		q, o := share(in, n, j), share(ood, n, j)
		if q+o == 0 {
			continue
		}
		w, id, path, err := f.build(ctx, role, uint64(j), q, o)
		if err != nil {
			return nil, err
		}
		d.worlds[id] = path
		d.eval = append(append(d.eval, w.Test...), w.Val...)
		d.ood = append(d.ood, w.OOD...)
	}
	return d, nil
}

// share is the j-th of n near-equal shares of total (the first total%n
// one more).
func share(total, n, j int) int {
	s := total / n
	if j < total%n {
		s++
	}
	return s
}

// batchWorld draws the world of an iteration's d-th draw, adds its index
// to the agent and returns its rollout.batch_size questions, and done,
// which drops the world and deletes its index once the draw's episodes
// are played.
func (t *Trainer) batchWorld(ctx context.Context, iter, d int) ([]envs.Task, func(), error) {
	w, id, path, err := t.data.fresh.build(ctx, synth.RoleTrain, trainWorld(iter, d), t.data.fresh.batch, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := t.agent.AddWorld(id, path); err != nil {
		return nil, nil, err
	}
	return w.Train, func() {
		if err := t.agent.DropWorld(id); err != nil {
			t.log.Warn().Err(err).Msg("drop a batch's world")
		}
		os.Remove(path)
	}, nil
}

// freshDemos renders the warm start's n demonstrations in worlds of their
// own: rollout.batch_size per world (worlds demo-1, demo-2, ...), each
// world's questions demonstrated as sft.warm_start says (generalDemos,
// or scriptedDemos for expert).
func (t *Trainer) freshDemos(ctx context.Context, n int) ([][]tokenizer.Message, error) {
	c := t.cfg.SFT
	var out [][]tokenizer.Message
	for k := uint64(1); len(out) < n; k++ {
		w, id, path, err := t.data.fresh.build(ctx, synth.RoleDemo, k, t.data.fresh.batch, 0)
		if err != nil {
			return nil, err
		}
		if err := t.agent.AddWorld(id, path); err != nil {
			return nil, err
		}
		tools, err := t.agent.ToolsFor(w.Train[0])
		var demos [][]tokenizer.Message
		m := min(t.data.fresh.batch, n-len(out))
		if err == nil && c.WarmStart == "expert" {
			demos, err = scriptedDemos(ctx, w, w.Train, tools, m, c.ImperfectFraction, t.rng)
		} else if err == nil {
			demos, err = generalDemos(ctx, w, w.Train, tools, m, c.WarmStart, t.rng)
		}
		if derr := t.agent.DropWorld(id); err == nil {
			err = derr
		}
		os.Remove(path)
		if err != nil {
			return nil, fmt.Errorf("demonstrations in world %s: %w", id, err)
		}
		out = append(out, demos...)
	}
	return out, nil
}
