package trainer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/synth"
	"github.com/agentrl/agentrl/envs/tasks"
	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/config"
)

// datasets are what the run trains and evaluates on.
type datasets struct {
	world     *synth.World // nil for dataset files
	train     []envs.Task
	eval      []envs.Task
	ood       []envs.Task // the synthetic world's out-of-domain questions, evaluated apart
	indexPath string
	fresh     *freshWorlds      // data.synthetic.fresh_worlds: every batch draws its world (fresh.go); nil otherwise
	worlds    map[string]string // the fresh evaluation worlds' IDs -> their indexes
}

// loadData generates the synthetic world (and its search index under
// runDir), or a fresh-worlds run's evaluation worlds (loadFresh), or loads
// the dataset files.
func loadData(ctx context.Context, cfg config.Config, runDir string) (*datasets, error) {
	d := &datasets{indexPath: cfg.Tools.Search.Index}
	var err error
	switch {
	case cfg.Data.Source == "synthetic" && cfg.Data.Synthetic.FreshWorlds:
		if d, err = loadFresh(ctx, cfg, runDir); err != nil {
			return nil, err
		}
	case cfg.Data.Source == "synthetic":
		sc := cfg.Data.Synthetic
		w, err := synth.Generate(synth.Config{Seed: int64(sc.Seed), Relations: sc.Relations, Entities: sc.Entities, Questions: sc.Questions,
			MaxHops: sc.MaxHops, TestFraction: sc.TestFraction, OODQuestions: sc.OODQuestions, ValQuestions: sc.ValQuestions})
		if err != nil {
			return nil, err
		}
		d.world, d.train, d.eval, d.ood = w, w.Train, w.Test, w.OOD
		if cfg.Eval.Split == "validation" { // the out-of-domain questions are test data: not read
			d.eval, d.ood = w.Val, nil
		}
		if d.indexPath == "" {
			d.indexPath = filepath.Join(runDir, "index.db")
			if _, err := os.Stat(d.indexPath); err != nil {
				if err := search.BuildIndex(ctx, d.indexPath, w.Passages, nil); err != nil {
					return nil, fmt.Errorf("build the synthetic world's index: %w", err)
				}
			}
		}
	case cfg.Data.Source == "files":
		for _, p := range cfg.Data.Train {
			ts, err := tasks.Load(p, cfg.Data.Format)
			if err != nil {
				return nil, err
			}
			d.train = append(d.train, ts...)
		}
		for _, p := range cfg.Data.Eval {
			ts, err := tasks.Load(p, cfg.Data.Format)
			if err != nil {
				return nil, err
			}
			d.eval = append(d.eval, ts...)
		}
		if len(d.train) == 0 {
			return nil, fmt.Errorf("data.train: no training questions (data.source is files)")
		}
	default:
		return nil, fmt.Errorf("data.source %q: want synthetic or files", cfg.Data.Source)
	}
	if n := cfg.Data.MaxTrain; n > 0 && n < len(d.train) {
		d.train = d.train[:n]
	}
	if n := cfg.Data.MaxEval; n > 0 && n < len(d.eval) {
		d.eval = d.eval[:n]
	}
	if n := cfg.Data.MaxEval; n > 0 && n < len(d.ood) {
		d.ood = d.ood[:n]
	}
	return d, nil
}

// agentSpec is the spec of the agent that plays d's tasks, with the
// tokenizer in tokenizerDir ("" = the synthetic world's word-level one,
// which with fresh worlds holds every name of their pool).
func agentSpec(cfg config.Config, d *datasets, tokenizerDir string) agent.Spec {
	s := agent.Spec{Config: cfg, Index: d.indexPath, TokenizerDir: tokenizerDir, World: d.world, Worlds: d.worlds,
		ShowSchemas: agent.SchemasShown(cfg)}
	if d.fresh != nil {
		pool, w := d.fresh.gen.Pool(), d.world
		s.Names = func(texts []string) []string { return pool.Contexts(w, texts) }
	}
	return s
}
