package trainer

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/envs/synth"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/datasets"
	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
)

// freshConfig is smallConfig with fresh worlds: 10 test questions and 4
// out-of-domain ones over 3 test worlds, deterministic rollouts.
func freshConfig(dir string) config.Config {
	c := smallConfig(dir)
	c.Run.Name = "fresh"
	c.Data.Synthetic.FreshWorlds = true
	c.Data.Synthetic.EvalWorlds = 3
	c.Data.Synthetic.TestFraction = 0.25
	c.Rollout.Deterministic = true
	c.Eval.MaxEval = 0
	return c
}

// The evaluation questions of a fresh-worlds run come from its test worlds
// (10 and 4 spread 4+3+3 and 2+1+1), each task naming its world, whose
// index the agent plays it with; the word-level tokenizer holds the names
// of worlds it was not built from (a training batch's demonstrations
// encode without an unknown token).
func TestFreshWorldsData(t *testing.T) {
	ctx := context.Background()
	cfg := freshConfig(t.TempDir())
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	d, err := datasets.Load(ctx, cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Train) != 0 || len(d.Eval) != 10 || len(d.OOD) != 4 || len(d.Worlds) != 3 {
		t.Fatalf("train %d eval %d ood %d worlds %d, want 0, 10, 4, 3", len(d.Train), len(d.Eval), len(d.OOD), len(d.Worlds))
	}
	perWorld := map[string][2]int{}
	for _, task := range slices.Concat(d.Eval, d.OOD) {
		id := task.Meta[synth.WorldKey]
		n := perWorld[id]
		if task.Meta["split"] == "ood" {
			n[1]++
		} else {
			n[0]++
		}
		perWorld[id] = n
	}
	if want := map[string][2]int{"test-0": {4, 2}, "test-1": {3, 1}, "test-2": {3, 1}}; fmt.Sprint(perWorld) != fmt.Sprint(want) {
		t.Errorf("questions per world %v, want %v", perWorld, want)
	}
	a, err := agent.New(ctx, d.AgentSpec(cfg, ""))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, task := range d.Eval {
		tools, err := a.ToolsFor(task)
		if err != nil {
			t.Fatal(err)
		}
		// The first hop's search in the task's own world returns the
		// passage of its start entity.
		res, err := tools[0].Call(ctx, []byte(fmt.Sprintf(`{"query": %q}`, task.Support[0])))
		if err != nil || len(res.Refs) == 0 || res.Refs[0] != task.Support[0] {
			t.Errorf("%s: searching %q in world %s gave %v (%v)", task.ID, task.Support[0], task.Meta[synth.WorldKey], res.Refs, err)
		}
	}
	// A training batch's world: added, played with its own index, dropped.
	w, id, done, err := d.Fresh.Open(ctx, a, synth.RoleTrain, datasets.TrainWorld(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	unk, _ := a.Tokenizer.TokenID(tokenizer.UnknownToken)
	for _, task := range w.Train {
		tools, err := a.ToolsFor(task)
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := agent.Demonstration(ctx, w, task, tools, false)
		if err != nil {
			t.Fatal(err)
		}
		text, err := a.Format.RenderText(msgs, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(a.Tokenizer.Encode(text), unk) {
			t.Errorf("world %s, %s: its demonstration has a piece the vocabulary lacks: %q", id, task.ID, text)
		}
	}
	if err := done(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.ToolsFor(w.Train[0]); err == nil {
		t.Error("a task of a dropped world: no error")
	}
	// What fresh worlds do not implement is refused by name, saying how to
	// turn them off (they are on by default); like every data.synthetic
	// key they leave other data sources alone.
	for _, c := range []struct{ key, value, want string }{
		{"data.max_train", "5", "data.max_train"},
		{"tools.search.index", "x.db", "tools.search.index"},
		{"data.synthetic.eval_worlds", "0", "data.synthetic.eval_worlds"},
	} {
		bad := freshConfig(t.TempDir())
		if err := bad.Set(c.key + "=" + c.value); err != nil {
			t.Fatal(err)
		}
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("fresh worlds with %s=%s: error %v, want one naming %s", c.key, c.value, err, c.want)
		} else if c.key != "data.synthetic.eval_worlds" && !strings.Contains(err.Error(), "set data.synthetic.fresh_worlds false") {
			t.Errorf("fresh worlds with %s=%s: %v does not say how to turn them off", c.key, c.value, err)
		}
	}
	files := freshConfig(t.TempDir())
	files.Data.Source, files.Data.Train = "files", []string{"x.jsonl"}
	if err := files.Validate(); err != nil {
		t.Errorf("data.source files with data.synthetic.fresh_worlds on: %v", err)
	}
}

// Two runs of the same fresh-worlds config store the same trajectories,
// token for token and logprob for logprob; every iteration trains on the
// questions of a world of its own (no task of one iteration is another's),
// and none is an evaluation question.
func TestFreshWorldsRerunIsIdentical(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	run := func() string {
		cfg := freshConfig(t.TempDir())
		tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Run(context.Background(), nil); err != nil {
			tr.Close()
			t.Fatal(err)
		}
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
		return RunDir(cfg)
	}
	a, b := run(), run()
	open := func(run string) *store.Store {
		s, err := store.Open(filepath.Join(run, "store.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	sa, sb := open(a), open(b)
	evalTasks := map[string]bool{}
	ev, err := sa.LoadIteration(0, trajectory.Eval)
	if err != nil || len(ev) == 0 {
		t.Fatalf("iteration 0's evaluation: %d trajectories (%v)", len(ev), err)
	}
	for _, x := range ev {
		evalTasks[x.TaskID] = true
	}
	seen := map[string]int{}
	for it := 1; it <= 2; it++ {
		want, err := sa.LoadIteration(it, trajectory.Train)
		if err != nil {
			t.Fatal(err)
		}
		got, err := sb.LoadIteration(it, trajectory.Train)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) != 8 || len(got) != 8 {
			t.Fatalf("iteration %d: %d and %d training trajectories, want 4 prompts x 2 samples", it, len(want), len(got))
		}
		byID := map[string]*trajectory.Trajectory{}
		for _, x := range got {
			byID[x.ID] = x
		}
		for _, w := range want {
			x := byID[w.ID]
			if x == nil {
				t.Errorf("iteration %d: trajectory %s is not in the second run", it, w.ID)
				continue
			}
			if x.TaskID != w.TaskID || !slices.Equal(x.Tokens, w.Tokens) || !slices.Equal(x.Logprobs, w.Logprobs) || x.Reward != w.Reward {
				t.Errorf("iteration %d: trajectory %s (task %s) differs between the two runs (task %s)", it, x.ID, x.TaskID, w.TaskID)
			}
			if prev, ok := seen[w.TaskID]; ok && prev != it {
				t.Errorf("task %s trained in iterations %d and %d", w.TaskID, prev, it)
			}
			seen[w.TaskID] = it
			if evalTasks[w.TaskID] {
				t.Errorf("iteration %d trains on evaluation task %s", it, w.TaskID)
			}
		}
	}
}
