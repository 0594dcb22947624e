package experiment

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/trainer"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/store"

	_ "github.com/mattn/go-sqlite3"
)

// The plan holds every warm start and row once, each row after its seed's
// warm start (so workers taking tasks in order never all wait on one not
// yet taken), and every warm start before any row (the longest runs
// first, so no warm start is left to run alone at the end).
func TestPlanOrder(t *testing.T) {
	o := Options{Seeds: []int{1, 2, 3}, OtherSeeds: []int{1}}
	tasks, err := plan(config.Default(), o)
	if err != nil {
		t.Fatal(err)
	}
	specs, on := Rows(o.Seeds, o.OtherSeeds, false, nil)
	want := len(o.Seeds)
	for _, s := range specs {
		want += len(on[s.Name])
	}
	if len(tasks) != want {
		t.Fatalf("%d tasks, want %d", len(tasks), want)
	}
	sftAt := map[int]int{}
	firstRow := map[int]int{}
	names := map[string]bool{}
	for i, tk := range tasks {
		if names[tk.cfg.Run.Name] {
			t.Fatalf("run %s planned twice", tk.cfg.Run.Name)
		}
		names[tk.cfg.Run.Name] = true
		if tk.spec == nil {
			sftAt[tk.seed] = i
			continue
		}
		at, ok := sftAt[tk.seed]
		if !ok {
			t.Fatalf("task %d (%s) comes before its seed's warm start", i, tk.cfg.Run.Name)
		}
		if tk.ready != tasks[at].ready || tk.cfg.Model.Path != tasks[at].sftDir {
			t.Errorf("%s does not start from its seed's warm start", tk.cfg.Run.Name)
		}
		if _, ok := firstRow[tk.seed]; !ok {
			firstRow[tk.seed] = i
		}
	}
	for _, seed := range o.Seeds {
		for _, row := range firstRow {
			if sftAt[seed] > row {
				t.Errorf("seed %d's warm start at %d, after a row at %d", seed, sftAt[seed], row)
			}
		}
	}
}

// With Options.Worlds every run of a seed, its warm start's included, is
// in that seed's world; a seed without one keeps the base config's.
func TestPlanWorlds(t *testing.T) {
	base := config.Default()
	o := Options{Seeds: []int{1, 2, 3}, OtherSeeds: []int{1}, Worlds: map[int]int{1: 11, 2: 12}}
	tasks, err := plan(base, o)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]int{1: 11, 2: 12, 3: base.Data.Synthetic.Seed}
	for _, tk := range tasks {
		if got := tk.cfg.Data.Synthetic.Seed; got != want[tk.seed] {
			t.Errorf("%s: world %d, want %d", tk.cfg.Run.Name, got, want[tk.seed])
		}
	}
}

// A seed given twice in Seeds or OtherSeeds, or two seeds given one
// world, is refused by name before anything is planned: a repeated seed
// planned its warm start twice (whose second end closed its channel again
// and panicked), and one world for two seeds made the nested interval
// count shared questions as independent.
func TestPlanRefusesRepeats(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want string
	}{
		{Options{Seeds: []int{1, 1}}, "seeds: 1 is given twice"},
		{Options{Seeds: []int{1, 2}, OtherSeeds: []int{2, 2}}, "other seeds: 2 is given twice"},
		{Options{Seeds: []int{1, 2}, Worlds: map[int]int{1: 11, 2: 11}}, "seeds 1 and 2 have the same world 11"},
	} {
		_, err := plan(config.Default(), c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.o, err, c.want)
		}
	}
	if _, err := Collect(t.TempDir(), []int{3, 3}, nil, false, nil); err == nil || !strings.Contains(err.Error(), "seeds: 3 is given twice") {
		t.Errorf("Collect of seeds 3,3: %v", err)
	}
}

// The extra rows run on the seeds of OtherSeeds that are in Seeds: with
// none (--seeds 1 --other-seeds 2 --extra), planning and collecting are
// refused, naming both flags and the rows, instead of a table without
// them; without --extra that table (the core rows alone) is planned.
func TestExtraRowsNeedAnOtherSeed(t *testing.T) {
	o := Options{Seeds: []int{1}, OtherSeeds: []int{2}, Extra: true}
	want := []string{"--extra", "--other-seeds", "GiGPO", "GRPO w/ bf16 rollouts"}
	_, err := plan(config.Default(), o)
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("plan %+v: got %v, want an error saying %q", o, err, w)
		}
	}
	_, err = Collect(t.TempDir(), o.Seeds, o.OtherSeeds, o.Extra, nil)
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Collect %+v: got %v, want an error saying %q", o, err, w)
		}
	}
	o.Extra = false
	if _, err := plan(config.Default(), o); err != nil {
		t.Errorf("plan %+v (the core rows alone): %v", o, err)
	}
}

// A finished run is kept on resume only when its stored config is the one
// this call would train it with: another iterations count and learning
// rate are refused, naming the run and exactly those two keys, and the
// same config (read back from the store's JSON) is kept.
func TestCheckKeptComparesStoredConfig(t *testing.T) {
	base := config.Default()
	base.Run.Dir = t.TempDir()
	tasks, err := plan(base, Options{Seeds: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	sft := tasks[0]
	if sft.spec != nil {
		t.Fatalf("the first task is %s, not the warm start", sft.cfg.Run.Name)
	}
	if err := checkKept(sft); err != nil {
		t.Fatalf("an unfinished warm start: %v", err)
	}
	dir := trainer.RunDir(sft.cfg)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, sftDone), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	older := sft.cfg
	older.Run.Iterations++
	older.Optim.LR *= 2
	cj, err := json.Marshal(older)
	if err != nil {
		t.Fatal(err)
	}
	storeRun(t, filepath.Join(dir, "store.db"), sft.cfg.Run.Name, cj)
	want := "resume: run paper-sft-s1 finished with another config than this call's (run.iterations, optim.lr differ)"
	if err := checkKept(sft); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
	same := *sft
	same.cfg = older
	if err := checkKept(&same); err != nil {
		t.Errorf("the stored config itself: %v", err)
	}
	// A run stored before a key existed lacks it: it reads as the key's
	// default, not as a difference.
	var m map[string]any
	if err := json.Unmarshal(cj, &m); err != nil {
		t.Fatal(err)
	}
	r, ok := m["Rollout"].(map[string]any)
	if _, has := r["Engine"]; !ok || !has || older.Rollout.Engine == "" {
		t.Fatalf("the stored config has no rollout engine to leave out: %v", m["Rollout"])
	}
	delete(r, "Engine")
	lacking, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	storeRun(t, filepath.Join(dir, "store.db"), sft.cfg.Run.Name, lacking)
	if err := checkKept(&same); err != nil {
		t.Errorf("a stored config without rollout.engine (a run from before the key): %v", err)
	}
}

// A finished run whose store an older build wrote (an older schema, which
// a read-only open refuses) is brought to this build's schema before
// resuming reads it, and is then kept.
func TestMigrateKeptOlderStore(t *testing.T) {
	base := config.Default()
	base.Run.Dir = t.TempDir()
	tasks, err := plan(base, Options{Seeds: []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	sft := tasks[0]
	if err := migrateKept(sft); err != nil {
		t.Fatalf("a run with no store yet: %v", err)
	}
	dir := trainer.RunDir(sft.cfg)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, sftDone), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cj, err := json.Marshal(sft.cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "store.db")
	storeRun(t, path, sft.cfg.Run.Name, cj)
	// The store as schema 8 left it: no continued_from.
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"ALTER TABLE trajectories DROP COLUMN continued_from", "PRAGMA user_version = 8"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	if err := checkKept(sft); err == nil || !strings.Contains(err.Error(), "schema version 8 is older") {
		t.Fatalf("the older store before migrating: %v, want the read-only open's refusal", err)
	}
	if err := migrateKept(sft); err != nil {
		t.Fatal(err)
	}
	if err := checkKept(sft); err != nil {
		t.Fatalf("the older store after migrating: %v", err)
	}
}

// storeRun writes the store at path with one run, name, begun with the
// config cfgJSON.
func storeRun(t *testing.T, path, name string, cfgJSON []byte) {
	t.Helper()
	s, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRun(store.RunInfo{Name: name, ConfigJSON: string(cfgJSON), Start: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
