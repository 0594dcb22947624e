package datasets

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/trainer/config"
)

// richWorld is the one world (fresh worlds off) of docs/experiments.md's
// amendment 2: the rich relations over 140 entities, 1,000 test and 600 training questions, 500
// out-of-domain ones, and here 300 validation questions more (taken from
// training's share).
func richWorld(t *testing.T) config.Config {
	t.Helper()
	cfg := config.Default()
	for _, kv := range []string{"data.synthetic.fresh_worlds=false", "data.synthetic.relations=rich", "data.synthetic.entities=140", "data.synthetic.questions=1900",
		"data.synthetic.test_fraction=0.5263", "data.synthetic.val_questions=300", "data.synthetic.ood_questions=500"} {
		if err := cfg.Set(kv); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// The trainer trains (and builds demonstrations) on the training split
// only: no validation, test or out-of-domain question is in it. The test
// run evaluates the 1,000 test and 500 out-of-domain questions; the
// validation run the 300 validation ones and no out-of-domain question.
func TestSplitsNeverTrainedOn(t *testing.T) {
	cfg := richWorld(t)
	d, err := Load(context.Background(), cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Train) != 600 || len(d.Eval) != 1000 || len(d.OOD) != 500 || len(d.World.Val) != 300 {
		t.Fatalf("train %d eval %d ood %d validation %d, want 600, 1000, 500, 300", len(d.Train), len(d.Eval), len(d.OOD), len(d.World.Val))
	}
	// data.synthetic.relations reached the world: passages state the rich
	// relations.
	if p := d.World.Passages[len(d.World.Passages)-1].Text; !strings.Contains(p, " learned from ") {
		t.Fatalf("a person's passage of the rich world states no mentor: %q", p)
	}
	held := map[string]string{}
	for split, ts := range map[string][]envs.Task{"validation": d.World.Val, "test": d.Eval, "ood": d.OOD} {
		for _, task := range ts {
			held[task.Question] = split
		}
	}
	for _, task := range d.Train {
		if split, ok := held[task.Question]; ok {
			t.Errorf("training question %q is in the %s split", task.Question, split)
		}
		if task.Meta["split"] != "train" {
			t.Errorf("training task %s has split %q", task.ID, task.Meta["split"])
		}
	}
	cfg.Eval.Split = "validation"
	v, err := Load(context.Background(), cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Eval) != 300 || len(v.OOD) != 0 || v.Eval[0].Meta["split"] != "validation" {
		t.Fatalf("eval.split validation: eval %d (%s), ood %d; want the 300 validation questions and none", len(v.Eval), v.Eval[0].Meta["split"], len(v.OOD))
	}
	for i := range v.Train {
		if v.Train[i].ID != d.Train[i].ID {
			t.Fatal("eval.split changed the training split")
		}
	}
}

// eval.split validation is refused, by name, where there is no
// validation split.
func TestValidationSplitNeedsQuestions(t *testing.T) {
	cfg := config.Default()
	cfg.Eval.Split = "validation"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "eval.split") {
		t.Errorf("eval.split validation without validation questions: %v, want an error naming eval.split", err)
	}
	cfg.Eval.Split = "dev"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "eval.split") {
		t.Errorf("eval.split dev: %v, want an error naming eval.split", err)
	}
}
