package synth

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

// freshShape is make paper's world shape under fresh worlds: 100
// entities, hops 1 to 3, out-of-domain questions asked.
func freshShape(seed int64) Config {
	return Config{Seed: seed, Entities: 100, MaxHops: 3, OODQuestions: 100}
}

func fresh(t testing.TB, shape Config) *Fresh {
	t.Helper()
	f, err := NewFresh(shape)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func freshWorld(t testing.TB, f *Fresh, r Role, n uint64, questions, ood int) *World {
	t.Helper()
	w, err := f.World(r, n, questions, ood)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestFreshWorldsAreDeterministicAndDiffer(t *testing.T) {
	f := fresh(t, freshShape(11))
	a, b := freshWorld(t, f, RoleTrain, 1, 16, 0), freshWorld(t, fresh(t, freshShape(11)), RoleTrain, 1, 16, 0)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("world train-1 of seed 11 differs between two draws")
	}
	c := freshWorld(t, f, RoleTrain, 2, 16, 0)
	if reflect.DeepEqual(a.Passages, c.Passages) || reflect.DeepEqual(a.Train, c.Train) {
		t.Fatal("worlds train-1 and train-2 are the same")
	}
	if len(a.Train) != 16 || len(a.Test) != 0 || len(a.OOD) != 0 || len(a.Val) != 0 {
		t.Fatalf("train world: %d train, %d test, %d ood, %d val questions, want 16, 0, 0, 0", len(a.Train), len(a.Test), len(a.OOD), len(a.Val))
	}
	for _, c := range []struct {
		r     Role
		split string
		tasks func(w *World) []envs.Task
	}{
		{RoleTrain, "train", func(w *World) []envs.Task { return w.Train }},
		{RoleDemo, "train", func(w *World) []envs.Task { return w.Train }},
		{RoleTest, "test", func(w *World) []envs.Task { return w.Test }},
		{RoleVal, "validation", func(w *World) []envs.Task { return w.Val }},
	} {
		w := freshWorld(t, f, c.r, 3, 12, 6)
		if got := len(allTasks(w)); got != 18 || len(c.tasks(w)) != 12 || len(w.OOD) != 6 {
			t.Errorf("%s world: %d questions, %d in its split, %d ood; want 18, 12, 6", c.r, got, len(c.tasks(w)), len(w.OOD))
		}
		for _, task := range allTasks(w) {
			want := c.split
			if strings.Contains(task.ID, "-ood-") {
				want = "ood"
			}
			if task.Meta["split"] != want || task.Meta[WorldKey] != ID(c.r, 3) {
				t.Errorf("%s world: task %s has meta %v, want split %s and world %s", c.r, task.ID, task.Meta, want, ID(c.r, 3))
			}
		}
	}
}

// TestFreshNamesComeFromThePool: every world names its entities from the
// one pool (so one vocabulary holds every world), with the words of a
// world of its own: none contains another, a template word or an answer.
func TestFreshNamesComeFromThePool(t *testing.T) {
	f := fresh(t, freshShape(11))
	pool := f.Pool().Words()
	// 100 entities: 10 countries, 25 cities, 15 companies, 50 people (two
	// words each); four times as many of each in the pool.
	if len(pool) != 4*(10+25+15+2*50) {
		t.Fatalf("pool of %d words, want 600", len(pool))
	}
	if p2 := fresh(t, freshShape(12)).Pool().Words(); !slices.Equal(pool, p2) {
		t.Error("the pools of world seeds 11 and 12 differ: the vocabulary would depend on the seed")
	}
	inPool := map[string]bool{}
	for _, w := range pool {
		inPool[w] = true
	}
	for n := range uint64(5) {
		w := freshWorld(t, f, RoleTest, n, 20, 10)
		namesNeverContainOneAnother(t, w)
		for _, e := range w.Entities {
			for _, x := range strings.Fields(e.Name) {
				if !inPool[x] {
					t.Errorf("world %s: name word %q is not in the pool", ID(RoleTest, n), x)
				}
			}
		}
	}
	if _, err := Generate(Config{Seed: 1, Entities: 500, Questions: 10, MaxHops: 3, Names: f.Pool()}); err == nil {
		t.Error("a 500-entity world from a 100-entity world's pool: no error")
	}
}

// TestFreshRolesAreDisjoint: the worlds a run trains, demonstrates and
// evaluates on are different worlds (different seeds), for the test seeds
// of make paper and the validation seed, and across those seeds.
func TestFreshRolesAreDisjoint(t *testing.T) {
	seen := map[int64]string{}
	for _, s := range []int64{8, 11, 12, 13, 14, 15} {
		f := fresh(t, freshShape(s))
		for _, r := range []Role{RoleTrain, RoleDemo, RoleTest, RoleVal, RoleVocab} {
			for n := range uint64(400) {
				k := f.Seed(r, n)
				if prev, dup := seen[k]; dup {
					t.Fatalf("seed %d world %s has the world seed of %s", s, ID(r, n), prev)
				}
				seen[k] = ID(r, n)
			}
		}
	}
}

// resolve is the answer of task's question (its chain of relations from
// its start entity's name) in world w; ok is false when w has no entity of
// that name.
func resolve(from *World, task envs.Task, w *World) (string, bool) {
	c := from.chains[task.ID]
	i, ok := w.byName[from.Entities[c.path[0]].Name]
	if !ok {
		return "", false
	}
	for _, r := range c.rels {
		i = w.byName[w.Entities[i].Links[r.name]]
	}
	if c.attr != nil {
		return w.Entities[i].Trait, true
	}
	return w.Entities[i].Name, true
}

// TestFreshAnswerIsOnlyInItsOwnWorld: a question's answer is what its own
// world's index gives, searched hop by hop, and the same question asked
// of other worlds (those that have its start entity) has another answer
// nearly always: at most as often the same as a guess among the answer's
// kind of value would be.
func TestFreshAnswerIsOnlyInItsOwnWorld(t *testing.T) {
	f := fresh(t, freshShape(11))
	test := freshWorld(t, f, RoleTest, 0, 60, 30)
	idx := worldIndex(t, test)
	for _, task := range allTasks(test) {
		d, err := test.Demonstration(task)
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range d.Steps {
			hits, err := idx.Search(context.Background(), s.Query, 1)
			if err != nil || len(hits) != 1 || hits[0].Title != s.Title || !strings.Contains(hits[0].Text, s.Found) {
				t.Fatalf("%s step %d: search %q gave %v (%v), want %q holding %q", task.ID, i, s.Query, hits, err, s.Title, s.Found)
			}
		}
	}
	same, asked := 0, 0
	for n := range uint64(100) {
		other := freshWorld(t, f, RoleTrain, n, 1, 0)
		for _, task := range allTasks(test) {
			if a, ok := resolve(test, task, other); ok {
				asked++
				if a == task.Answers[0] {
					same++
				}
			}
		}
	}
	// Uniform draws give the same answer about 1/9 of the time on an
	// attribute question and 1/4 of 1/25 on a city: below 0.1 overall.
	if share := float64(same) / float64(asked); asked < 500 || share > 0.1 {
		t.Errorf("the same question in other worlds had the same answer %d of %d times (%.3f), want at most 0.1 of at least 500", same, asked, share)
	}
	t.Logf("the same question asked of other worlds: same answer %d of %d times (%.3f)", same, asked, float64(same)/float64(asked))
}
