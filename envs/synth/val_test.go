package synth

import (
	"reflect"
	"strings"
	"testing"
)

// Amendment 1's 300-entity world (docs/experiments.md, dropped after its
// validation, kept here for its sizes): 1,600
// in-domain questions split 1,000 test / 300 validation / 300 train, and
// 500 out-of-domain ones, all distinct chains, each split labelled.
func TestValidationSplitIsDisjointAndSized(t *testing.T) {
	w := generate(t, Config{Seed: 7, Entities: 300, Questions: 1600, MaxHops: 3, TestFraction: 0.625, OODQuestions: 500, ValQuestions: 300})
	if len(w.Train) != 300 || len(w.Val) != 300 || len(w.Test) != 1000 || len(w.OOD) != 500 {
		t.Fatalf("train %d validation %d test %d ood %d, want 300, 300, 1000, 500", len(w.Train), len(w.Val), len(w.Test), len(w.OOD))
	}
	chains, split := map[string]string{}, map[string][]string{}
	for _, task := range allTasks(w) {
		key := w.chains[task.ID].key()
		if other, dup := chains[key]; dup {
			t.Errorf("chain %s in %s and %s", key, other, task.Meta["split"])
		}
		chains[key] = task.Meta["split"]
		split[task.Meta["split"]] = append(split[task.Meta["split"]], task.ID)
	}
	for name, n := range map[string]int{"train": 300, "validation": 300, "test": 1000, "ood": 500} {
		if len(split[name]) != n {
			t.Errorf("%d tasks labelled %q, want %d", len(split[name]), name, n)
		}
	}
	hops := map[int]int{}
	for _, task := range w.Test {
		hops[task.Hops]++
	}
	for h := 1; h <= 3; h++ { // a random third of 1,000, give or take
		if hops[h] < 280 || hops[h] > 390 {
			t.Errorf("test has %d %d-hop questions, want about 333", hops[h], h)
		}
	}
	for _, task := range w.OOD {
		if !strings.Contains(task.ID, "-ood-") {
			t.Errorf("ood task %s", task.ID)
		}
	}
}

// Validation questions come out of the training side only: with
// ValQuestions 0 a world is what it was, and with it the test split is
// the same and train loses exactly the validation questions.
func TestValidationLeavesTestAlone(t *testing.T) {
	cfg := Config{Seed: 7, Entities: 80, Questions: 400, MaxHops: 3, TestFraction: 0.25, OODQuestions: 60}
	plain := generate(t, cfg)
	cfg.ValQuestions = 50
	val := generate(t, cfg)
	if !reflect.DeepEqual(plain.Test, val.Test) || !reflect.DeepEqual(plain.OOD, val.OOD) {
		t.Error("validation questions changed the test or out-of-domain split")
	}
	if len(val.Train) != 250 || len(val.Val) != 50 {
		t.Fatalf("train %d validation %d, want 250 and 50", len(val.Train), len(val.Val))
	}
	for i, task := range val.Train {
		if task.ID != plain.Train[i].ID {
			t.Fatalf("train[%d] = %s, want %s", i, task.ID, plain.Train[i].ID)
		}
	}
	for i, task := range val.Val {
		if task.ID != plain.Train[250+i].ID || task.Meta["split"] != "validation" {
			t.Fatalf("validation[%d] = %s (%s), want %s", i, task.ID, task.Meta["split"], plain.Train[250+i].ID)
		}
	}
	if len(plain.Val) != 0 {
		t.Errorf("ValQuestions 0 gave %d validation questions", len(plain.Val))
	}
	for _, bad := range []Config{{Seed: 1, Entities: 80, Questions: 400, MaxHops: 3, TestFraction: 0.25, ValQuestions: -1},
		{Seed: 1, Entities: 80, Questions: 400, MaxHops: 3, TestFraction: 0.25, ValQuestions: 300}} {
		if _, err := Generate(bad); err == nil || !strings.Contains(err.Error(), "ValQuestions") {
			t.Errorf("ValQuestions %d: err %v, want one naming ValQuestions", bad.ValQuestions, err)
		}
	}
}

// Out-of-domain questions are drawn after the in-domain ones: the default
// world with 140 of them has the training and test questions of the one
// with 60, and those 60 first (docs/experiments.md, amendment 1).
func TestMoreOODLeavesTheRestAlone(t *testing.T) {
	cfg := Config{Seed: 7, Entities: 80, Questions: 400, MaxHops: 3, TestFraction: 0.25, OODQuestions: 60}
	a := generate(t, cfg)
	cfg.OODQuestions = 140
	b := generate(t, cfg)
	if !reflect.DeepEqual(a.Train, b.Train) || !reflect.DeepEqual(a.Test, b.Test) || !reflect.DeepEqual(a.OOD, b.OOD[:60]) || len(b.OOD) != 140 {
		t.Error("140 out-of-domain questions changed the training or test questions or the first 60 out-of-domain ones")
	}
}
