// Package experiment runs the paper's comparison at small scale: the
// naive-RAG and base-tool-call baselines and the RL rows of PaperSpecs,
// over several seeds, and writes the table and the paper's claims checked
// seed by seed.
package experiment

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/internal/stat"
	"github.com/agentrl/agentrl/trainer"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/results"
	"github.com/agentrl/agentrl/trainer/store"
)

// Spec is one RL row of the comparison: a run from the seed's warm start
// with config overrides.
type Spec struct {
	Name string   // table row and run-name stem
	Set  []string // overrides of the base config, "key=value" as --set takes them
	// Algorithm marks an RL algorithm's row: the claims check that it
	// reaches 2.5x naive RAG's average EM.
	Algorithm bool
	// Ablates names the row this one removes something from: the claims
	// check that row is ahead of this one ("" = none).
	Ablates string
}

// PaperSpecs are the RL rows of the table, in table order: the four
// algorithms, PPO without each mask, PPO with GAE lambda 0.95 (where GAE
// no longer telescopes, so the critic's values on tool tokens can matter)
// with and without the advantage mask, then GiGPO, GRPO with GSPO's loss
// (its paper's clip range and per-sequence mean), and GRPO decoding its
// rollouts in bf16 with and without truncated importance sampling. A row
// is one entry; the claims follow Algorithm and Ablates.
var PaperSpecs = []Spec{
	{Name: "PPO", Set: []string{"algorithm.estimator=gae"}, Algorithm: true},
	{Name: "GRPO", Set: []string{"algorithm.estimator=grpo"}, Algorithm: true},
	{Name: "REINFORCE++", Set: []string{"algorithm.estimator=reinforce_pp"}, Algorithm: true},
	{Name: "RLOO", Set: []string{"algorithm.estimator=rloo"}, Algorithm: true},
	{Name: "PPO w/o advantage mask", Set: []string{"algorithm.estimator=gae", "algorithm.advantage_mask=false"}, Ablates: "PPO"},
	{Name: "PPO w/o loss mask", Set: []string{"algorithm.estimator=gae", "algorithm.loss_mask=false"}, Ablates: "PPO"},
	{Name: "PPO λ=0.95", Set: []string{"algorithm.estimator=gae", "algorithm.lambda=0.95"}},
	{Name: "PPO λ=0.95 w/o advantage mask", Set: []string{"algorithm.estimator=gae", "algorithm.lambda=0.95", "algorithm.advantage_mask=false"}, Ablates: "PPO λ=0.95"},
	{Name: "GiGPO", Set: []string{"algorithm.estimator=gigpo"}, Algorithm: true},
	{Name: "GRPO w/ GSPO loss", Set: []string{"algorithm.estimator=grpo", "algorithm.policy_loss=gspo",
		"algorithm.clip_low=0.0003", "algorithm.clip_high=0.0004", "algorithm.loss_agg=seq-mean-token-mean"}, Algorithm: true},
	{Name: "GRPO w/ bf16 rollouts + TIS", Set: []string{"algorithm.estimator=grpo", "rollout.dtype=bf16",
		"algorithm.rollout_correction=tis"}},
	{Name: "GRPO w/ bf16 rollouts", Set: []string{"algorithm.estimator=grpo", "rollout.dtype=bf16",
		"algorithm.rollout_correction=off"}, Ablates: "GRPO w/ bf16 rollouts + TIS"},
}

// Baselines are the rows measured before RL.
var Baselines = []string{"Naive RAG", "Base Tool Call"}

// specConfig is the config of spec's run for one seed: base with the
// spec's overrides, the warm-started model, and the baselines evaluated in
// the seed's first run only.
func specConfig(base config.Config, spec Spec, seed int, sftDir string, first bool) (config.Config, error) {
	rc := base
	for _, kv := range spec.Set {
		if err := rc.Set(kv); err != nil {
			return rc, fmt.Errorf("row %s: %w", spec.Name, err)
		}
	}
	rc.Run.Seed = seed
	rc.Run.Name = runName(spec.Name, seed)
	rc.Model.Path = sftDir
	rc.Eval.Baselines = first
	if err := rc.Validate(); err != nil {
		return rc, fmt.Errorf("row %s: %w", spec.Name, err)
	}
	return rc, nil
}

// Cell is a mean and spread over seeds, with the per-seed values in seed
// order (so methods can be compared seed by seed).
type Cell struct {
	Mean, Std float64
	N         int
	Values    []float64
}

// Table is the outcome: per method, EM per hop count, on average over the
// evaluation split, and on the out-of-domain split.
type Table struct {
	Methods []string
	Hops    []int
	EM      map[string]map[string]Cell // method -> "hop1".."hopN", "avg", "ood"
	Runs    map[string][]string        // method -> run names (for curves)
	Seeds   []int
	Wall    time.Duration
}

// Options are the experiment's knobs besides the base config.
type Options struct {
	Seeds    []int
	Log      zerolog.Logger
	Progress trainer.ProgressFunc
	// OnRun is told when each run starts (name) for progress output.
	OnRun func(name string, i, total int)
}

// runName is the run of a row and seed: the row's name in lowercase
// letters and digits, "+" as p, "λ" as lambda, anything else a single "-".
func runName(stem string, seed int) string {
	s := ""
	for _, r := range stem {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			s += string(r)
		case r >= 'A' && r <= 'Z':
			s += string(r + 'a' - 'A')
		case r == '+':
			s += "p"
		case r == 'λ':
			s += "lambda"
		case !strings.HasSuffix(s, "-"):
			s += "-"
		}
	}
	return fmt.Sprintf("paper-%s-s%d", strings.Trim(s, "-"), seed)
}

// Run warm-starts one model per seed, trains every spec from it (the
// seed's first run also evaluates the baselines), and collects the table
// from the runs' stores.
func Run(ctx context.Context, base config.Config, o Options) (*Table, error) {
	for _, spec := range PaperSpecs { // a broken row fails before any training
		if _, err := specConfig(base, spec, 1, "", true); err != nil {
			return nil, err
		}
	}
	total := len(o.Seeds) * (1 + len(PaperSpecs))
	n := 0
	for _, seed := range o.Seeds {
		cfg := base
		cfg.Run.Seed = seed
		cfg.Run.Name = runName("sft", seed)
		if o.OnRun != nil {
			o.OnRun(cfg.Run.Name, n, total)
		}
		n++
		if err := os.RemoveAll(trainer.RunDir(cfg)); err != nil {
			return nil, err
		}
		t, err := trainer.New(ctx, cfg, trainer.Options{Log: o.Log, Progress: o.Progress})
		if err != nil {
			return nil, err
		}
		sftDir := filepath.Join(t.Dir(), "sft")
		err = t.SFT(ctx, sftDir)
		if cerr := t.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("warm start of seed %d: %w", seed, err)
		}
		for i, spec := range PaperSpecs {
			rc, err := specConfig(base, spec, seed, sftDir, i == 0) // naive RAG once per seed
			if err != nil {
				return nil, err
			}
			if o.OnRun != nil {
				o.OnRun(rc.Run.Name, n, total)
			}
			n++
			if err := os.RemoveAll(trainer.RunDir(rc)); err != nil {
				return nil, err
			}
			if err := runOne(ctx, rc, o); err != nil {
				return nil, fmt.Errorf("run %s: %w", rc.Run.Name, err)
			}
		}
	}
	return Collect(base.Run.Dir, o.Seeds)
}

// Collect builds the table from the stores of finished paper runs under
// runsDir: per seed, the baselines from the first spec's iteration 0 and
// each spec's last evaluation. The wall time is the span from the first
// run's start to the last iteration written.
func Collect(runsDir string, seeds []int) (*Table, error) {
	tab := &Table{EM: map[string]map[string]Cell{}, Runs: map[string][]string{}, Seeds: seeds}
	samples := map[string]map[string][]float64{}
	add := func(method, key string, v float64) {
		if samples[method] == nil {
			samples[method] = map[string][]float64{}
		}
		samples[method][key] = append(samples[method][key], v)
	}
	var paths []string
	for _, seed := range seeds {
		paths = append(paths, filepath.Join(runsDir, runName("sft", seed), "store.db"))
		for i, spec := range PaperSpecs {
			name := runName(spec.Name, seed)
			path := filepath.Join(runsDir, name, "store.db")
			paths = append(paths, path)
			res, err := results.Read(path, spec.Name)
			if err != nil {
				return nil, fmt.Errorf("run %s: %w", name, err)
			}
			if _, ok := res.Metrics[spec.Name]; !ok {
				return nil, fmt.Errorf("run %s has no final evaluation: did it finish?", name)
			}
			tab.Runs[spec.Name] = append(tab.Runs[spec.Name], name)
			for method, m := range res.Metrics {
				if method != spec.Name && i != 0 {
					continue // the baselines: once per seed, from the first spec's run
				}
				for k, v := range m {
					if k == metric.EM {
						add(method, "avg", v)
					} else if h, ok := strings.CutPrefix(k, metric.EMHopPrefix); ok {
						add(method, "hop"+h, v)
					}
				}
				if v, ok := res.OOD[method][metric.EM]; ok {
					add(method, "ood", v)
				}
			}
			for _, h := range res.Hops {
				if !containsInt(tab.Hops, h) {
					tab.Hops = append(tab.Hops, h)
				}
			}
		}
	}
	for _, m := range append(append([]string{}, Baselines...), specNames()...) {
		if samples[m] == nil {
			continue
		}
		tab.Methods = append(tab.Methods, m)
		tab.EM[m] = map[string]Cell{}
		for k, xs := range samples[m] {
			tab.EM[m][k] = meanStd(xs)
		}
	}
	sort.Ints(tab.Hops)
	wall, err := span(paths)
	if err != nil {
		return nil, err
	}
	tab.Wall = wall
	return tab, nil
}

// span is the time from the earliest run start to the latest iteration
// written among the stores.
func span(paths []string) (time.Duration, error) {
	var first, last time.Time
	for _, p := range paths {
		for _, q := range []string{"SELECT MIN(started_at) FROM runs", "SELECT MAX(created_at) FROM iterations"} {
			_, rows, err := store.QueryReadOnly(p, q)
			if err != nil {
				return 0, err
			}
			if len(rows) == 0 || rows[0][0] == nil {
				continue
			}
			ts, err := time.Parse(time.RFC3339Nano, fmt.Sprint(rows[0][0]))
			if err != nil {
				return 0, fmt.Errorf("%s: %w", p, err)
			}
			if first.IsZero() || ts.Before(first) {
				first = ts
			}
			if ts.After(last) {
				last = ts
			}
		}
	}
	return last.Sub(first), nil
}

func runOne(ctx context.Context, cfg config.Config, o Options) error {
	t, err := trainer.New(ctx, cfg, trainer.Options{Log: o.Log, Progress: o.Progress})
	if err != nil {
		return err
	}
	_, err = t.Run(ctx, nil)
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	return err
}

func specNames() []string {
	var out []string
	for _, s := range PaperSpecs {
		out = append(out, s.Name)
	}
	return out
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// meanStd is the mean and the sample standard deviation (n-1; 0 for n=1).
func meanStd(xs []float64) Cell {
	c := Cell{N: len(xs), Values: xs}
	c.Mean, c.Std = stat.MeanStd(xs, 1)
	return c
}
