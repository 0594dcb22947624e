// Package datasets loads what a run trains and evaluates on: the
// synthetic world and its search index, a fresh-worlds run's evaluation
// worlds (and the world each training batch draws), or dataset files;
// and the spec of the agent that plays their tasks.
package datasets

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

// Sets are what the run trains and evaluates on.
type Sets struct {
	World     *synth.World // nil for dataset files
	Train     []envs.Task
	Eval      []envs.Task
	OOD       []envs.Task // the synthetic world's out-of-domain questions, evaluated apart
	IndexPath string
	Fresh     *Fresh            // data.synthetic.fresh_worlds: every batch draws its world (fresh.go); nil otherwise
	Worlds    map[string]string // the fresh evaluation worlds' IDs -> their indexes
}

// Load generates the synthetic world (and its search index under
// runDir), or a fresh-worlds run's evaluation worlds (loadFresh), or loads
// the dataset files.
func Load(ctx context.Context, cfg config.Config, runDir string) (*Sets, error) {
	d := &Sets{IndexPath: cfg.Tools.Search.Index}
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
		d.World, d.Train, d.Eval, d.OOD = w, w.Train, w.Test, w.OOD
		if cfg.Eval.Split == "validation" { // the out-of-domain questions are test data: not read
			d.Eval, d.OOD = w.Val, nil
		}
		if d.IndexPath == "" {
			d.IndexPath = filepath.Join(runDir, "index.db")
			if _, err := os.Stat(d.IndexPath); err != nil {
				if err := search.BuildIndex(ctx, d.IndexPath, w.Passages, nil); err != nil {
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
			d.Train = append(d.Train, ts...)
		}
		for _, p := range cfg.Data.Eval {
			ts, err := tasks.Load(p, cfg.Data.Format)
			if err != nil {
				return nil, err
			}
			d.Eval = append(d.Eval, ts...)
		}
		if len(d.Train) == 0 {
			return nil, fmt.Errorf("data.train: no training questions (data.source is files)")
		}
	default:
		return nil, fmt.Errorf("data.source %q: want synthetic or files", cfg.Data.Source)
	}
	if n := cfg.Data.MaxTrain; n > 0 && n < len(d.Train) {
		d.Train = d.Train[:n]
	}
	if n := cfg.Data.MaxEval; n > 0 && n < len(d.Eval) {
		d.Eval = d.Eval[:n]
	}
	if n := cfg.Data.MaxEval; n > 0 && n < len(d.OOD) {
		d.OOD = d.OOD[:n]
	}
	return d, nil
}

// AgentSpec is the spec of the agent that plays d's tasks, with the
// tokenizer in tokenizerDir ("" = the synthetic world's word-level one,
// which with fresh worlds holds every name of their pool).
func (d *Sets) AgentSpec(cfg config.Config, tokenizerDir string) agent.Spec {
	s := agent.Spec{Config: cfg, Index: d.IndexPath, TokenizerDir: tokenizerDir, World: d.World, Worlds: d.Worlds,
		ShowSchemas: agent.SchemasShown(cfg)}
	if d.Fresh != nil {
		pool, w := d.Fresh.gen.Pool(), d.World
		s.Names = func(texts []string) []string { return pool.Contexts(w, texts) }
	}
	return s
}
