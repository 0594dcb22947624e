package experiment

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agentrl/agentrl/trainer"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/store"
)

// task is one run of the experiment: a seed's warm start (spec nil) or a
// row's RL run from it.
type task struct {
	seed int
	spec *Spec
	cfg  config.Config
	// sftDir is where a warm start writes its model; ready is closed when
	// the seed's warm start is done, and a row's run waits for it.
	sftDir string
	ready  chan struct{}
}

// plan lists the experiment's runs in the order they start: every seed's
// warm start, then each seed's rows. The warm starts are the longest
// runs, so with several jobs starting them first keeps every worker busy
// to the end (the rows fill in beside the last warm starts) instead of
// leaving the last seed's warm start to run alone.
func plan(base config.Config, o Options) ([]*task, error) {
	if err := checkSeeds(o.Seeds, o.OtherSeeds, o.Extra, o.Rows); err != nil {
		return nil, err
	}
	worlds := map[int]int{}
	for seed, w := range o.Worlds {
		if other, ok := worlds[w]; ok {
			return nil, fmt.Errorf("seeds %d and %d have the same world %d: each seed's world must be its own", min(seed, other), max(seed, other), w)
		}
		worlds[w] = seed
	}
	specs, on := Rows(o.Seeds, o.OtherSeeds, o.Extra, o.Rows)
	sft := map[int]*task{}
	for _, seed := range o.Seeds {
		cfg := seedBase(base, seed, o.Worlds)
		cfg.Run.Seed = seed
		cfg.Run.Name = runName("sft", seed)
		sft[seed] = &task{seed: seed, cfg: cfg, sftDir: filepath.Join(trainer.RunDir(cfg), "sft"), ready: make(chan struct{})}
	}
	var tasks []*task
	for _, seed := range o.Seeds {
		tasks = append(tasks, sft[seed])
	}
	for _, seed := range o.Seeds {
		for _, spec := range specs {
			if !slices.Contains(on[spec.Name], seed) {
				continue
			}
			rc, err := specConfig(seedBase(base, seed, o.Worlds), spec, seed, sft[seed].sftDir, spec.Name == specs[0].Name) // the baselines once per seed
			if err != nil {
				return nil, err
			}
			tasks = append(tasks, &task{seed: seed, spec: &spec, cfg: rc, ready: sft[seed].ready})
		}
	}
	return tasks, nil
}

// checkJobs refuses settings that several runs in one process would share:
// LoRA dropout draws from libtorch's global generator, and the
// asynchronous loop sets the process's thread count per role.
func checkJobs(base config.Config, jobs int) error {
	if jobs <= 1 {
		return nil
	}
	if base.Model.LoRA.Dropout > 0 {
		return fmt.Errorf("--jobs %d with lora.dropout %g: LoRA dropout draws from libtorch's one global generator, so runs at once would change each other's masks; use --jobs 1 or lora.dropout 0", jobs, base.Model.LoRA.Dropout)
	}
	if base.Rollout.MaxStaleness > 0 {
		return fmt.Errorf("--jobs %d with rollout.max_staleness %d: the asynchronous loop sets the process's libtorch thread count per role, so runs at once would change each other's; use --jobs 1 or max_staleness 0", jobs, base.Rollout.MaxStaleness)
	}
	return nil
}

// runTasks trains the tasks with o.Jobs workers taking them in order. A
// row's run starts once its seed's warm start is done; the first error
// stops the rest and is returned.
func runTasks(ctx context.Context, tasks []*task, o Options) error {
	jobs := max(o.Jobs, 1)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	queue := make(chan int)
	go func() {
		defer close(queue)
		for i := range tasks {
			select {
			case queue <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	var mu sync.Mutex // OnRun's calls
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// libtorch keeps per-thread state: a run's calls stay on one
			// OS thread, as the main goroutine's do.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for i := range queue {
				tk := tasks[i]
				if tk.spec != nil {
					select {
					case <-tk.ready:
					case <-ctx.Done():
						return
					}
				}
				if o.OnRun != nil {
					mu.Lock()
					o.OnRun(tk.cfg.Run.Name, i, len(tasks))
					mu.Unlock()
				}
				if err := runTask(ctx, tk, o); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// checkSeeds refuses a seed given twice in seeds or in other: a seed is
// one warm start and one run per row, and the intervals count each seed
// once. With extra it refuses the extra rows on no seed (none of other in
// seeds): they were asked for, and would be neither trained nor shown.
// It refuses in rows a name that is not a row of PaperSpecs, one given
// twice, and one that would run on no seed.
func checkSeeds(seeds, other []int, extra bool, rows []string) error {
	for _, list := range []struct {
		name  string
		seeds []int
	}{{"seeds", seeds}, {"other seeds", other}} {
		for i, s := range list.seeds {
			if slices.Contains(list.seeds[:i], s) {
				return fmt.Errorf("%s: %d is given twice: each seed must be its own", list.name, s)
			}
		}
	}
	_, on := Rows(seeds, other, extra, rows)
	for i, name := range rows {
		if slices.Contains(rows[:i], name) {
			return fmt.Errorf("rows: %q is given twice", name)
		}
		if !slices.ContainsFunc(PaperSpecs, func(s Spec) bool { return s.Name == name }) {
			names := make([]string, len(PaperSpecs))
			for j, s := range PaperSpecs {
				names[j] = s.Name
			}
			return fmt.Errorf("rows: %q is not a row of the table (%s)", name, strings.Join(names, "; "))
		}
		if len(on[name]) == 0 {
			return fmt.Errorf("rows: %q runs on none of these seeds (an extra row needs --extra and --other-seeds in --seeds; a core row its MaxSeed)", name)
		}
	}
	if !extra {
		return nil
	}
	var none []string
	for _, s := range PaperSpecs {
		if s.Extra && len(on[s.Name]) == 0 && (len(rows) == 0 || slices.Contains(rows, s.Name)) {
			none = append(none, s.Name)
		}
	}
	if len(none) > 0 {
		return fmt.Errorf("--extra with --seeds %s and --other-seeds %s: the extra rows (%s) run on the seeds of --other-seeds that are in --seeds, "+
			"and none is, so they would be neither trained nor shown; give --other-seeds a seed of --seeds", seedText(seeds), seedText(other), strings.Join(none, ", "))
	}
	return nil
}

// seedText writes seeds as their flag takes them: 1,2,3.
func seedText(seeds []int) string {
	s := make([]string, len(seeds))
	for i, n := range seeds {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// done reports whether the task finished in an earlier call: a warm
// start's marker is written, a row's store holds its final evaluation.
func done(tk *task) bool {
	dir := trainer.RunDir(tk.cfg)
	if tk.spec == nil {
		_, err := os.Stat(filepath.Join(dir, sftDone))
		return err == nil
	}
	return finished(filepath.Join(dir, "store.db"), tk.spec.Name)
}

// sftDone is the file a warm start writes into its run folder once its
// model is saved.
const sftDone = "sft.done"

// storedConfig is the config run name was trained with, as the runs table
// of the store at path holds it. A key the stored config lacks (one added
// to agentrl after the run) takes its default, the behaviour the run had.
func storedConfig(path, name string) (config.Config, error) {
	_, rows, err := store.QueryReadOnly(path, "SELECT config FROM runs WHERE name = ?", name)
	if err != nil {
		return config.Config{}, fmt.Errorf("run %s: %w", name, err)
	}
	if len(rows) != 1 {
		return config.Config{}, fmt.Errorf("run %s: its store holds %d configs of it, not one", name, len(rows))
	}
	saved := config.Default()
	if err := json.Unmarshal([]byte(fmt.Sprint(rows[0][0])), &saved); err != nil {
		return config.Config{}, fmt.Errorf("run %s: its stored config: %w", name, err)
	}
	return saved, nil
}

// migrateKept brings the store of a task's earlier run that an older
// build wrote to this build's schema, so that resuming reads it (a
// read-only open does not migrate, and a store it cannot read would count
// as unfinished and be trained again). Any other store, or none, is left
// untouched.
func migrateKept(tk *task) error {
	path := filepath.Join(trainer.RunDir(tk.cfg), "store.db")
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	ro, err := store.OpenReadOnly(path)
	if err == nil {
		return ro.Close()
	}
	if !errors.As(err, new(store.OlderSchemaError)) {
		return nil // what checkKept and the run itself say of it
	}
	s, err := store.Open(path)
	if err != nil {
		return fmt.Errorf("resume: run %s: %w", tk.cfg.Run.Name, err)
	}
	return s.Close()
}

// checkKept refuses to resume over a finished task whose stored config
// (the one its store's runs table holds) differs from the one this call
// would train it with: keeping it would mix runs of two configs in one
// table. It names the run and the keys that differ.
func checkKept(tk *task) error {
	if !done(tk) {
		return nil
	}
	name := tk.cfg.Run.Name
	saved, err := storedConfig(filepath.Join(trainer.RunDir(tk.cfg), "store.db"), name)
	if err != nil {
		return fmt.Errorf("resume: %w: rerun without resume to train it again", err)
	}
	if diff := tk.cfg.Diff(saved); len(diff) > 0 {
		return fmt.Errorf("resume: run %s finished with another config than this call's (%s differ): "+
			"give the settings it was trained with, or rerun without resume to train every run again", name, strings.Join(diff, ", "))
	}
	return nil
}

// runTask trains one task, or, with o.Resume, keeps it if it finished
// before (checkKept has compared its config). A warm start, done or kept,
// releases its seed's rows.
func runTask(ctx context.Context, tk *task, o Options) error {
	dir := trainer.RunDir(tk.cfg)
	if tk.spec == nil {
		if !o.Resume || !done(tk) {
			if err := warmStart(ctx, tk.cfg, tk.sftDir, o); err != nil {
				return fmt.Errorf("warm start of seed %d: %w", tk.seed, err)
			}
			if err := os.WriteFile(filepath.Join(dir, sftDone), nil, 0o644); err != nil {
				return err
			}
		}
		close(tk.ready)
		return nil
	}
	if o.Resume && done(tk) {
		return nil
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := runOne(ctx, tk.cfg, o); err != nil {
		return fmt.Errorf("run %s: %w", tk.cfg.Run.Name, err)
	}
	return nil
}
