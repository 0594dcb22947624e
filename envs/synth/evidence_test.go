package synth

import (
	"context"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/tools/search"
)

// worldSearch is the search tool (2 passages a call, as make paper's)
// over an index of w's passages, as the agent gives it to world id's tasks
// (an envs.WorldTool).
func worldSearch(t *testing.T, w *World, id string) envs.Tool {
	t.Helper()
	return inWorld{search.NewSearchTool(worldIndex(t, w), 2), id}
}

// inWorld is a tool over one world's index.
type inWorld struct {
	envs.Tool
	world string
}

func (t inWorld) World() string { return t.world }

// The evidence of a real 2-hop question of a fresh world, on hand-made
// episodes played with the search tool over its world's index: each
// supporting passage (the entities of the question's chain, as the world's
// demonstration walks it) is credited once, at the turn whose search first
// returned it, and its process reward (env.rewards.support, 0.25 here)
// lands on that turn. Another world of the same pool has passages titled
// with a chain name (about another entity): searching its index is never
// credited.
func TestEvidenceCreditedAtFirstRetrieval(t *testing.T) {
	f := fresh(t, freshShape(11))
	w := freshWorld(t, f, RoleTrain, 1, 60, 0)
	var task envs.Task
	for _, tk := range w.Train {
		if tk.Hops == 2 {
			task = tk
			break
		}
	}
	if task.ID == "" {
		t.Fatal("the world has no 2-hop question")
	}
	d, err := w.Demonstration(task)
	if err != nil {
		t.Fatal(err)
	}
	if len(task.Support) != 2 || d.Steps[0].Title != task.Support[0] || d.Steps[1].Title != task.Support[1] {
		t.Fatalf("support %q, chain %+v: want the chain's two titles", task.Support, d.Steps)
	}
	first, second := d.Steps[0].Query, d.Steps[1].Query // the start entity, then the name the first passage gives
	own := worldSearch(t, w, task.Meta[WorldKey])
	refs := func(tool envs.Tool, q string) []string {
		res, err := tool.Call(context.Background(), []byte(`{"query": "`+q+`"}`))
		if err != nil || !res.OK {
			t.Fatalf("search %q: %v %+v", q, err, res)
		}
		return res.Refs
	}
	// A passage of the world whose search returns no supporting passage.
	stranger := ""
	for _, p := range w.Passages {
		if rs := refs(own, p.Title); !slices.Contains(rs, task.Support[0]) && !slices.Contains(rs, task.Support[1]) {
			stranger = p.Title
			break
		}
	}
	if !slices.Contains(refs(own, first), task.Support[0]) || !slices.Contains(refs(own, second), task.Support[1]) {
		t.Fatalf("searching %q and %q does not return the chain's passages %q", first, second, task.Support)
	}
	// Another world that has a passage titled with a chain name (about
	// another entity of that name: fresh worlds share the pool's names),
	// which its search returns.
	var other envs.Tool
	var shared []string // the chain's names it has
	for n := uint64(2); n < 200 && other == nil; n++ {
		o := freshWorld(t, f, RoleTrain, n, 1, 0)
		for _, name := range task.Support {
			if _, ok := o.Passage(name); ok {
				shared = append(shared, name)
			}
		}
		if len(shared) > 0 {
			other = worldSearch(t, o, ID(RoleTrain, n))
		}
	}
	if other == nil {
		t.Fatal("no world among 200 has a chain name")
	}
	for _, name := range shared {
		if !slices.Contains(refs(other, name), name) {
			t.Fatalf("the other world's search for %q does not return its passage of that title", name)
		}
	}
	cfg := envs.DefaultEnvConfig()
	cfg.MaxTurns = 4
	cfg.Rewards.Support = 0.25
	call := func(q string) string {
		return "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"" + q + "\"}}\n</tool_call>"
	}
	for _, c := range []struct {
		name    string
		tool    envs.Tool
		queries []string
		want    []int
	}{
		{"nothing", own, []string{stranger}, []int{0}},
		{"one hop", own, []string{first}, []int{1}},
		{"both hops", own, []string{first, second}, []int{1, 1}},
		{"the first passage again, asked otherwise", own, []string{first, first + " " + first, second}, []int{1, 0, 1}},
		{"another world's passages of the same titles", other, shared, make([]int, len(shared))},
	} {
		e, err := envs.NewToolEnv(task, []envs.Tool{c.tool}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range c.queries {
			res, err := e.Step(context.Background(), envs.Action{Text: call(q), Tokens: 5, TotalTokens: 100})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Calls) != 1 || !res.Calls[0].OK {
				t.Fatalf("%s: search %q: %+v", c.name, q, res.Calls)
			}
			if res.Evidence != c.want[i] || res.ProcessReward != 0.25*float64(c.want[i]) {
				t.Errorf("%s: turn %d credited %d passages (process reward %v), want %d (%v)", c.name, i, res.Evidence,
					res.ProcessReward, c.want[i], 0.25*float64(c.want[i]))
			}
			if u := e.History()[i]; u.Evidence != res.Evidence {
				t.Errorf("%s: turn %d recorded evidence %d, its step %d", c.name, i, u.Evidence, res.Evidence)
			}
		}
	}
}
