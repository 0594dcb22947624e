package inspect

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
)

// Size of a generated store's iterations: groups of samples of training
// episodes, and evaluation episodes (one per task).
const (
	genGroups  = 100
	genSamples = 8
	genEval    = 200
	genTokens  = 128 // tokens per trajectory
)

// genTools are the tools a generated episode calls.
var genTools = []string{"search", "lookup", "calculator"}

// genStore writes a store of iterations 0 to iters-1, each of
// genGroups*genSamples training and genEval evaluation episodes, with
// seeded random rewards, turns, tool calls and tokens, and a value for
// every declared metric; it returns the store's path. 100 iterations are
// 100,000 trajectories.
func genStore(tb testing.TB, dir string, iters int) string {
	tb.Helper()
	path := filepath.Join(dir, "gen", "store.db")
	s, err := store.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.BeginRun(store.RunInfo{Name: "gen", ConfigJSON: `{"algorithm":{"estimator":"grpo"}}`}); err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for it := range iters {
		var trs []*trajectory.Trajectory
		for g := range genGroups {
			task := (it*genGroups + g) % 2000
			for k := range genSamples {
				trs = append(trs, genTraj(rng, it, trajectory.Train, g, k, task))
			}
		}
		for e := range genEval {
			trs = append(trs, genTraj(rng, it, trajectory.Eval, e, 0, 2000+e))
		}
		m := map[string]float64{}
		for _, d := range metric.Defs {
			m[d.Name] = rng.Float64()
			if d.Episode {
				m[metric.Eval+d.Name] = rng.Float64()
			}
		}
		m[metric.NaiveRAG+metric.EM] = 0.3
		if err := s.WriteIteration(it, m, trs); err != nil {
			tb.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// genTraj makes one generated episode.
func genTraj(rng *rand.Rand, it int, split trajectory.Split, group, sample, task int) *trajectory.Trajectory {
	correct := rng.IntN(3) == 0
	t := &trajectory.Trajectory{
		ID: fmt.Sprintf("%d-%s-%d-%d", it, split, group, sample), Iteration: it, Split: split, Group: group, Sample: sample,
		TaskID: fmt.Sprintf("task-%d", task), Dataset: "gen", Hops: 1 + task%3, PolicyVersion: it,
		Question: fmt.Sprintf("Which river flows through the city number %d, founded in the year %d by its first settlers?", task, 1000+task),
		Gold:     []string{fmt.Sprintf("river %d", task)}, Correct: correct, Stop: trajectory.StopAnswer, DurationMS: 100 * rng.Float64(),
		PromptLen: 32,
	}
	t.Answer = fmt.Sprintf("river %d", task)
	if !correct {
		t.Answer = fmt.Sprintf("stream %d", rng.IntN(5000))
	}
	if rng.IntN(10) == 0 {
		t.Stop, t.Answer = trajectory.StopMaxTurns, ""
	}
	t.Outcome = map[bool]float64{true: 1, false: 0}[correct]
	t.Reward = t.Outcome + 0.1*rng.NormFloat64()
	t.Components = map[string]float64{"em": t.Outcome, "format": 0.1}
	for i := range 1 + rng.IntN(3) {
		tool := genTools[rng.IntN(len(genTools))]
		t.Turns = append(t.Turns, trajectory.Turn{Text: "<tool_call>" + tool + "</tool_call>", GenTokens: 10,
			Calls: []trajectory.ToolCall{{Name: tool, Args: fmt.Sprintf(`{"query":"q%d"}`, i), Result: "some passage text",
				OK: rng.IntN(5) > 0, LatencyMS: 5}}})
	}
	t.Turns = append(t.Turns, trajectory.Turn{Text: "<answer>" + t.Answer + "</answer>", GenTokens: 8})
	n := genTokens
	t.Tokens, t.Logprobs, t.Mask, t.TurnOf = make([]int32, n), make([]float32, n), make([]uint8, n), make([]int16, n)
	t.Advantages, t.TrainLogprobs, t.Entropies = make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range n {
		t.Tokens[i], t.TurnOf[i] = int32(rng.IntN(150000)), -1
		if i >= t.PromptLen && i%3 != 0 {
			t.Mask[i], t.TurnOf[i] = 1, 0
			t.Logprobs[i] = -rng.Float32() * 3
			t.TrainLogprobs[i] = t.Logprobs[i] + 0.01*float32(rng.NormFloat64())
			t.Entropies[i] = rng.Float32() * 2
			t.Advantages[i] = float32(t.Reward - 0.5)
		}
	}
	return t
}

// benchPages are the pages timed on the generated store: the runs page
// and a chart, the trajectories table unfiltered, with each filter, sorted
// and deep in its pages, one trajectory, and the SQL box with each example
// query.
func benchPages() []struct{ name, path string } {
	pages := []struct{ name, path string }{
		{"runs", "/"},
		{"chart", "/chart/0.png"},
		{"list", "/r/0/trajectories"},
		{"list_iteration", "/r/0/trajectories?iteration=50"},
		{"list_correct", "/r/0/trajectories?correct=0"},
		{"list_reward", "/r/0/trajectories?reward_min=0.5&reward_max=0.9"},
		{"list_stop", "/r/0/trajectories?stop=max_turns"},
		{"list_tool", "/r/0/trajectories?tool=calculator"},
		{"list_turns", "/r/0/trajectories?turns=2"},
		{"list_text", "/r/0/trajectories?q=number+1234,"},
		{"list_sort_reward", "/r/0/trajectories?sort=reward&dir=desc"},
		{"list_filter_sort", "/r/0/trajectories?split=train&correct=1&tool=lookup&sort=tokens&dir=desc"},
		{"list_last_page", "/r/0/trajectories?page=2000"},
		{"trajectory", "/r/0/t/54321"},
		{"sql_empty", "/r/0/sql"},
	}
	for i, e := range examples {
		pages = append(pages, struct{ name, path string }{fmt.Sprintf("sql_example_%d", i+1), "/r/0/sql?q=" + url.QueryEscape(e.SQL)})
	}
	return pages
}

// BenchmarkPages times each page's server time on a store of 100,000
// trajectories (100 iterations of 1,000). Goal: under 300 ms each.
//
//	go test -tags sqlite_fts5 ./inspect -run '^$' -bench Pages -benchtime 10x
func BenchmarkPages(b *testing.B) {
	path := genStore(b, b.TempDir(), 100)
	srv, err := New([]Source{{Label: "gen", Path: path}})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	for _, p := range benchPages() {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				rec := httptest.NewRecorder()
				srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p.path, nil))
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: status %d: %s", p.path, rec.Code, rec.Body.String())
				}
			}
		})
	}
}
