package experiment

import (
	"testing"

	"github.com/agentrl/agentrl/trainer/config"
)

// The plan holds every warm start and row once, each row after its seed's
// warm start (so workers taking tasks in order never all wait on one not
// yet taken), and the next seed's warm start before a seed's rows (so a
// second worker has it to train while the first runs rows).
func TestPlanOrder(t *testing.T) {
	o := Options{Seeds: []int{1, 2, 3}, OtherSeeds: []int{1}}
	tasks, err := plan(config.Default(), o)
	if err != nil {
		t.Fatal(err)
	}
	specs, on := Rows(o.Seeds, o.OtherSeeds, false)
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
	for _, seed := range o.Seeds[1:] {
		if sftAt[seed] > firstRow[seed-1] {
			t.Errorf("seed %d's warm start at %d, after seed %d's first row at %d", seed, sftAt[seed], seed-1, firstRow[seed-1])
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
