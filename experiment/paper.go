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
	"slices"
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
	// Core marks the paper's core rows, run on every seed; the others run
	// on Options.OtherSeeds only (docs/experiments.md, the protocol).
	Core bool
	// MaxSeed bounds a Core row's seeds: it runs on those of Options.Seeds
	// up to MaxSeed (0: every one). The rows of the designs before
	// amendment 17 keep the five seeds they were run on while the rows it
	// names run on ten.
	MaxSeed int
	// Extra marks a row outside the paper's table, run only with
	// Options.Extra (trainer experiment paper --extra).
	Extra bool
	// Process marks a row trained with the mission's process rewards
	// (amendment 11): the claims check that it is above naive RAG and the
	// base tool-calling model in-domain, at least ProcessOverBase times the
	// base's multi-hop EM, and not below naive RAG out of domain.
	Process bool
}

// PaperSpecs are the RL rows of the table, in table order: the four
// algorithms, PPO without each mask, GRPO without the per-group standard
// deviation (Dr. GRPO's advantage), PPO with GAE lambda 0.95 (where GAE
// no longer telescopes, so the critic's values on tool tokens can matter)
// with and without the advantage mask, then the Extra rows: GiGPO, GRPO
// with GSPO's loss (its paper's clip range and per-sequence mean), and
// GRPO decoding its rollouts in bf16 with and without truncated
// importance sampling; and the two rows with process rewards (amendment
// 11: env.rewards.support 0.3 per supporting passage first retrieved, 60
// iterations, as its validation chose), PPO and GRPO w/o std, the same
// two at 80 iterations (amendment 13's validation's choice), and PPO at 80
// with near-miss continuations (amendment 15's); amendment 17 runs PPO
// (whose run evaluates the baselines) and the three rows at 80 iterations
// on every seed, the other core rows on seeds 1-5 (MaxSeed). A row is one
// entry; the claims follow Algorithm, Ablates and Process. The first row
// is Core: its run of a seed evaluates the baselines.
var PaperSpecs = []Spec{
	{Name: "PPO", Set: []string{"algorithm.estimator=gae"}, Algorithm: true, Core: true},
	{Name: "GRPO", Set: []string{"algorithm.estimator=grpo"}, Algorithm: true, Core: true, MaxSeed: 5},
	{Name: "REINFORCE++", Set: []string{"algorithm.estimator=reinforce_pp"}, Algorithm: true, Core: true, MaxSeed: 5},
	{Name: "RLOO", Set: []string{"algorithm.estimator=rloo"}, Algorithm: true},
	{Name: "PPO w/o advantage mask", Set: []string{"algorithm.estimator=gae", "algorithm.advantage_mask=false"}, Ablates: "PPO", Core: true, MaxSeed: 5},
	{Name: "PPO w/o loss mask", Set: []string{"algorithm.estimator=gae", "algorithm.loss_mask=false"}, Ablates: "PPO", Core: true, MaxSeed: 5},
	{Name: "GRPO w/o std normalisation", Set: []string{"algorithm.estimator=grpo", "algorithm.norm_by_std=false"}, Ablates: "GRPO", Core: true, MaxSeed: 5},
	{Name: "PPO λ=0.95", Set: []string{"algorithm.estimator=gae", "algorithm.lambda=0.95"}},
	{Name: "PPO λ=0.95 w/o advantage mask", Set: []string{"algorithm.estimator=gae", "algorithm.lambda=0.95", "algorithm.advantage_mask=false"}, Ablates: "PPO λ=0.95"},
	{Name: "GiGPO", Set: []string{"algorithm.estimator=gigpo"}, Algorithm: true, Extra: true},
	{Name: "GRPO w/ GSPO loss", Set: []string{"algorithm.estimator=grpo", "algorithm.policy_loss=gspo",
		"algorithm.clip_low=0.0003", "algorithm.clip_high=0.0004", "algorithm.loss_agg=seq-mean-token-mean"}, Algorithm: true, Extra: true},
	{Name: "GRPO w/ bf16 rollouts + TIS", Set: []string{"algorithm.estimator=grpo", "rollout.dtype=bf16",
		"algorithm.rollout_correction=tis"}, Extra: true},
	{Name: "GRPO w/ bf16 rollouts", Set: []string{"algorithm.estimator=grpo", "rollout.dtype=bf16",
		"algorithm.rollout_correction=off"}, Ablates: "GRPO w/ bf16 rollouts + TIS", Extra: true},
	{Name: "PPO + process rewards", Set: []string{"algorithm.estimator=gae", "env.rewards.support=0.3", "run.iterations=60"},
		Process: true, Core: true, MaxSeed: 5},
	{Name: "GRPO w/o std + process rewards", Set: []string{"algorithm.estimator=grpo", "algorithm.norm_by_std=false",
		"env.rewards.support=0.3", "run.iterations=60"}, Process: true, Core: true, MaxSeed: 5},
	{Name: "PPO + process rewards, 80 its", Set: []string{"algorithm.estimator=gae", "env.rewards.support=0.3", "run.iterations=80"},
		Process: true, Core: true},
	{Name: "GRPO w/o std + process rewards, 80 its", Set: []string{"algorithm.estimator=grpo", "algorithm.norm_by_std=false",
		"env.rewards.support=0.3", "run.iterations=80"}, Process: true, Core: true},
	{Name: "PPO + process rewards, near-miss, 80 its", Set: []string{"algorithm.estimator=gae", "env.rewards.support=0.3",
		"algorithm.near_miss=true", "algorithm.near_miss_samples=2", "run.iterations=80"}, Process: true, Core: true},
}

// Baselines are the rows measured before RL.
var Baselines = []string{results.NaiveRAG, results.BaseToolCall}

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

// seedBase is base with the seed's world (Options.Worlds), if it has one.
func seedBase(base config.Config, seed int, worlds map[int]int) config.Config {
	if w, ok := worlds[seed]; ok {
		base.Data.Synthetic.Seed = w
	}
	return base
}

// Cell is a mean and spread over seeds, with the per-seed values in seed
// order, and, where per-question outcomes were read, the 95% interval
// over seeds and questions (stat.CrossedInterval, or stat.NestedInterval
// where each seed has its own questions).
type Cell struct {
	Mean, Std float64
	N         int
	Values    []float64
	Interval  *stat.Interval
}

// Table is the outcome: per method, EM per hop count, on average over the
// evaluation split, and on the out-of-domain split, and the per-question
// outcomes behind the last two.
type Table struct {
	Methods []string
	Hops    []int
	EM      map[string]map[string]Cell // method -> "hop1".."hopN", "avg", "ood"
	// Outcomes are method -> split (results.SplitInDomain, SplitOOD) ->
	// seed -> 0/1 per question, a seed's questions in one order for all
	// methods.
	Outcomes map[string]map[string]map[int][]float64
	Runs     map[string][]string // method -> run names (for curves)
	// Behaviour is how each method but naive RAG searched on its in-domain
	// evaluation episodes, averaged over its seeds (results.ReadBehaviour).
	Behaviour map[string]results.Behaviour
	// WarmStart is the runs' sft.warm_start, from their stored configs.
	WarmStart string
	Seeds     []int
	// Nested is true for a split whose questions differ between seeds
	// (one world per seed, Options.Worlds): its intervals and claims then
	// nest questions in seeds (stat.NestedInterval, stat.NestedBootstrap)
	// instead of crossing them.
	Nested map[string]bool
	Wall   time.Duration
}

// Options are the experiment's knobs besides the base config.
type Options struct {
	Seeds []int
	// OtherSeeds are the seeds the rows not marked Core run on (nil: all
	// of Seeds).
	OtherSeeds []int
	// Worlds maps a seed to the seed of its world (data.synthetic.seed) for
	// every run of that seed, its warm start's included; a seed not in it
	// keeps the base config's world. With one world per seed, each seed's
	// test questions are its own.
	Worlds map[int]int
	// Extra adds the Extra rows (on OtherSeeds).
	Extra bool
	// Rows, when not empty, names the only rows trained and shown (the
	// first of them evaluates each seed's baselines).
	Rows []string
	// Resume keeps a seed's finished warm start and every finished run
	// (one whose store has its final evaluation), running only the rest:
	// an interrupted experiment goes on where it stopped. A finished run
	// whose stored config differs from the one this call would train is
	// refused by name, with the keys that differ, before anything trains.
	Resume   bool
	Log      zerolog.Logger
	Progress trainer.ProgressFunc
	// OnRun is told when each run starts (name) for progress output; with
	// Jobs > 1, from one goroutine at a time.
	OnRun func(name string, i, total int)
	// Jobs is how many runs train at once (0 or 1: one after the other).
	// Runs are independent (each has its own seeded generators, store and
	// folder), so a row's figures do not depend on Jobs; every run then
	// shares the process's libtorch thread count (device.threads).
	Jobs int
}

// Rows are the specs of the table and the seeds each runs on, in table
// order: the Core rows on seeds (up to their MaxSeed), the others on other
// (nil: seeds), the Extra rows only with extra; with only, just the rows
// it names (checkSeeds refuses a name that is not a row).
func Rows(seeds, other []int, extra bool, only []string) ([]Spec, map[string][]int) {
	if other == nil {
		other = seeds
	}
	var specs []Spec
	on := map[string][]int{}
	for _, s := range PaperSpecs {
		if s.Extra && !extra || len(only) > 0 && !slices.Contains(only, s.Name) {
			continue
		}
		for _, seed := range seeds {
			if s.Core && (s.MaxSeed == 0 || seed <= s.MaxSeed) || !s.Core && slices.Contains(other, seed) {
				on[s.Name] = append(on[s.Name], seed)
			}
		}
		if len(on[s.Name]) > 0 {
			specs = append(specs, s)
		}
	}
	return specs, on
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

// Run warm-starts one model per seed, trains every row of that seed from
// it (the seed's first run, the first row's, also evaluates the
// baselines), and collects the table from the runs' stores. With
// Options.Jobs > 1 that many runs train at once (see Options.Jobs).
func Run(ctx context.Context, base config.Config, o Options) (*Table, error) {
	if err := checkJobs(base, o.Jobs); err != nil {
		return nil, err
	}
	for _, spec := range PaperSpecs { // a broken row fails before any training
		if _, err := specConfig(base, spec, 1, "", true); err != nil {
			return nil, err
		}
	}
	tasks, err := plan(base, o)
	if err != nil {
		return nil, err
	}
	if o.Resume { // before any training: a refusal leaves every run as it was
		for _, tk := range tasks {
			if err := migrateKept(tk); err != nil {
				return nil, err
			}
			if err := checkKept(tk); err != nil {
				return nil, err
			}
		}
	}
	if err := runTasks(ctx, tasks, o); err != nil {
		return nil, err
	}
	return Collect(base.Run.Dir, o.Seeds, o.OtherSeeds, o.Extra, o.Rows)
}

// warmStart trains the seed's warm start into sftDir, from a clean run
// folder.
func warmStart(ctx context.Context, cfg config.Config, sftDir string, o Options) error {
	if err := os.RemoveAll(trainer.RunDir(cfg)); err != nil {
		return err
	}
	t, err := trainer.New(ctx, cfg, trainer.Options{Log: o.Log, Progress: o.Progress})
	if err != nil {
		return err
	}
	err = t.SFT(ctx, sftDir)
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	return err
}

// finished reports whether the run's store holds its final evaluation.
func finished(storePath, name string) bool {
	if _, err := os.Stat(storePath); err != nil {
		return false
	}
	res, err := results.Read(storePath, name)
	if err != nil {
		return false
	}
	_, ok := res.Metrics[name]
	return ok
}

// Collect builds the table from the stores of finished paper runs under
// runsDir, with Run's rows and seeds: per seed, the baselines from the
// first row's iteration 0 and each row's last evaluation, as EM per hop
// count and per-question outcomes. The wall time is the span from the
// first run's start to the last iteration written.
func Collect(runsDir string, seeds, other []int, extra bool, rows []string) (*Table, error) {
	if err := checkSeeds(seeds, other, extra, rows); err != nil {
		return nil, err
	}
	tab := &Table{EM: map[string]map[string]Cell{}, Runs: map[string][]string{}, Seeds: seeds,
		Outcomes: map[string]map[string]map[int][]float64{}, Nested: map[string]bool{}, Behaviour: map[string]results.Behaviour{}}
	behaviours := map[string][]results.Behaviour{}
	specs, on := Rows(seeds, other, extra, rows)
	samples := map[string]map[string][]float64{}
	add := func(method, key string, v float64) {
		if samples[method] == nil {
			samples[method] = map[string][]float64{}
		}
		samples[method][key] = append(samples[method][key], v)
	}
	questions := map[string]map[int][]string{} // split -> seed -> question IDs, sorted, from the seed's first run read
	var paths []string
	for _, seed := range seeds {
		paths = append(paths, filepath.Join(runsDir, runName("sft", seed), "store.db"))
		for i, spec := range specs {
			if !slices.Contains(on[spec.Name], seed) {
				continue
			}
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
			outcomes, err := results.ReadOutcomes(path, spec.Name)
			if err != nil {
				return nil, fmt.Errorf("run %s: %w", name, err)
			}
			bs, err := results.ReadBehaviour(path, spec.Name)
			if err != nil {
				return nil, fmt.Errorf("run %s: %w", name, err)
			}
			for method, b := range bs {
				if method == spec.Name || i == 0 { // the base model once per seed, from the first row's run
					behaviours[method] = append(behaviours[method], b)
				}
			}
			tab.Runs[spec.Name] = append(tab.Runs[spec.Name], name)
			saved, err := storedConfig(path, name)
			if err != nil {
				return nil, err
			}
			if tab.WarmStart != "" && saved.SFT.WarmStart != tab.WarmStart {
				return nil, fmt.Errorf("run %s was warm-started with sft.warm_start %s, the runs before it with %s: one table holds one design",
					name, saved.SFT.WarmStart, tab.WarmStart)
			}
			tab.WarmStart = saved.SFT.WarmStart
			for method, m := range res.Metrics {
				if method != spec.Name && i != 0 {
					continue // the baselines: once per seed, from the first row's run
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
				for split := range outcomes[method] {
					if questions[split] == nil {
						questions[split] = map[int][]string{}
					}
					ids := questions[split][seed]
					if ids == nil {
						for id := range outcomes[method][split] {
							ids = append(ids, id)
						}
						sort.Strings(ids)
						questions[split][seed] = ids
					}
					if len(outcomes[method][split]) != len(ids) {
						return nil, fmt.Errorf("run %s: %s has %d %s questions, the seed's first run read had %d", name, method, len(outcomes[method][split]), split, len(ids))
					}
					v, err := outcomes.Vector(method, split, ids)
					if err != nil {
						return nil, fmt.Errorf("run %s: %w", name, err)
					}
					if tab.Outcomes[method] == nil {
						tab.Outcomes[method] = map[string]map[int][]float64{}
					}
					if tab.Outcomes[method][split] == nil {
						tab.Outcomes[method][split] = map[int][]float64{}
					}
					tab.Outcomes[method][split][seed] = v
				}
			}
			for _, h := range res.Hops {
				if !slices.Contains(tab.Hops, h) {
					tab.Hops = append(tab.Hops, h)
				}
			}
		}
	}
	for split, bySeed := range questions {
		tab.Nested[split] = !sameQuestions(bySeed)
	}
	for _, m := range append(append([]string{}, Baselines...), specNamesOf(specs)...) {
		if samples[m] == nil {
			continue
		}
		tab.Methods = append(tab.Methods, m)
		tab.EM[m] = map[string]Cell{}
		for k, xs := range samples[m] {
			tab.EM[m][k] = meanStd(xs)
		}
		for key, split := range map[string]string{"avg": results.SplitInDomain, "ood": results.SplitOOD} {
			if y := tab.grid(m, split, seeds); y != nil {
				interval := stat.CrossedInterval
				if tab.Nested[split] {
					interval = stat.NestedInterval
				}
				iv, err := interval(y)
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", m, split, err)
				}
				c := tab.EM[m][key]
				c.Interval = &iv
				tab.EM[m][key] = c
			}
		}
	}
	for m, bs := range behaviours {
		tab.Behaviour[m] = meanBehaviour(bs)
	}
	sort.Ints(tab.Hops)
	wall, err := span(paths)
	if err != nil {
		return nil, err
	}
	tab.Wall = wall
	return tab, nil
}

// sameQuestions reports whether every seed has the same questions.
func sameQuestions(bySeed map[int][]string) bool {
	var first []string
	for _, ids := range bySeed {
		if first == nil {
			first = ids
		} else if !slices.Equal(ids, first) {
			return false
		}
	}
	return true
}

// grid is the method's outcomes on split as a seeds × questions matrix,
// over those of seeds it has (nil for none).
func (t *Table) grid(method, split string, seeds []int) [][]float64 {
	var y [][]float64
	for _, s := range seeds {
		if v, ok := t.Outcomes[method][split][s]; ok {
			y = append(y, v)
		}
	}
	return y
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

func specNamesOf(specs []Spec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// meanBehaviour is the mean of each figure of bs (one per seed); Episodes
// their sum.
func meanBehaviour(bs []results.Behaviour) results.Behaviour {
	var m results.Behaviour
	n := float64(len(bs))
	for _, b := range bs {
		m.Episodes += b.Episodes
		m.Searches += b.Searches / n
		m.MultiHop1 += b.MultiHop1 / n
		m.MultiHop2 += b.MultiHop2 / n
		m.MultiHop3 += b.MultiHop3 / n
		m.Evidence += b.Evidence / n
		m.AnswerInResult += b.AnswerInResult / n
		m.NoSearch += b.NoSearch / n
	}
	return m
}

// meanStd is the mean and the sample standard deviation (n-1; 0 for n=1).
func meanStd(xs []float64) Cell {
	c := Cell{N: len(xs), Values: xs}
	c.Mean, c.Std = stat.MeanStd(xs, 1)
	return c
}
