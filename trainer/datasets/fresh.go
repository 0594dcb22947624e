package datasets

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentrl/agentrl/envs/synth"
	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/config"
)

// Fresh are a run's fresh worlds (data.synthetic.fresh_worlds): a
// world of its own for every training batch and for every
// rollout.batch_size demonstrations of the warm start, and eval_worlds
// more that hold the evaluation questions. Each world is drawn from the
// world seed, its role and its number (synth.Fresh), so a rerun or a
// resume draws the same ones.
type Fresh struct {
	gen   *synth.Fresh
	dir   string // where the worlds' search indexes are built
	batch int    // questions of a training or demonstration world
}

// TrainWorld is the number of the world of an iteration's d-th draw:
// 100·iteration + d (a draw is below algorithm.max_num_gen_batches, at
// most 100), so world train-1203 is iteration 12's fourth draw.
func TrainWorld(iter, d int) uint64 { return uint64(iter)*100 + uint64(d) }

// build generates world n of role r with questions in-domain and ood
// out-of-domain questions and builds its search index, returning the
// world, its ID and the index's path.
func (f *Fresh) build(ctx context.Context, r synth.Role, n uint64, questions, ood int) (*synth.World, string, string, error) {
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
func loadFresh(ctx context.Context, cfg config.Config, runDir string) (*Sets, error) {
	sc := cfg.Data.Synthetic
	gen, err := synth.NewFresh(synth.Config{Seed: int64(sc.Seed), Relations: sc.Relations, Entities: sc.Entities,
		MaxHops: sc.MaxHops, OODQuestions: sc.OODQuestions})
	if err != nil {
		return nil, err
	}
	f := &Fresh{gen: gen, dir: filepath.Join(runDir, "worlds"), batch: cfg.Rollout.BatchSize}
	if err := os.MkdirAll(f.dir, 0o755); err != nil {
		return nil, err
	}
	d := &Sets{Fresh: f, Worlds: map[string]string{}}
	if d.World, _, d.IndexPath, err = f.build(ctx, synth.RoleVocab, 0, sc.Questions, sc.OODQuestions); err != nil {
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
		d.Worlds[id] = path
		d.Eval = append(append(d.Eval, w.Test...), w.Val...)
		d.OOD = append(d.OOD, w.OOD...)
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

// Questions is the number of questions of a training or demonstration
// world: rollout.batch_size.
func (f *Fresh) Questions() int { return f.batch }

// Open draws world n of role r (an iteration's draw, TrainWorld, or a
// warm start's demonstrations) with rollout.batch_size questions, builds
// its index and adds it to the agent a. done drops the world from a and
// deletes its index once its episodes are played.
func (f *Fresh) Open(ctx context.Context, a *agent.Agent, r synth.Role, n uint64) (w *synth.World, id string, done func() error, err error) {
	w, id, path, err := f.build(ctx, r, n, f.batch, 0)
	if err != nil {
		return nil, "", nil, err
	}
	if err := a.AddWorld(id, path); err != nil {
		return nil, "", nil, err
	}
	return w, id, func() error {
		err := a.DropWorld(id)
		os.Remove(path)
		return err
	}, nil
}
