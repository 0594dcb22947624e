package inspect

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
	"github.com/agentrl/agentrl/trajectory/trajectorytest"
)

// fixtureRow is one trajectory of the fixture store; tools lists one
// turn per tool call (each with one call), and an episode that stopped on
// an answer has one more turn, the answer's.
type fixtureRow struct {
	iter          int
	split         trajectory.Split
	group, sample int
	task, answer  string
	correct       bool
	reward        float64
	stop          trajectory.StopReason
	tools         []string
}

// questions of the fixture's two tasks.
var questions = map[string]string{
	"t1": "What is the capital of France?",
	"t2": "Who wrote « Le Petit Prince »?",
}

// fixtureRows: iteration 0 evaluates the two tasks (the baselines), 1 and
// 2 train two groups of two samples, 2 evaluates again. The tests'
// expected counts are read off this table.
var fixtureRows = []fixtureRow{
	{0, trajectory.Eval, 0, 0, "t1", "Paris", true, 1.0, trajectory.StopAnswer, []string{"search"}},
	{0, trajectory.Eval, 1, 0, "t2", "Camus", false, 0.0, trajectory.StopAnswer, []string{"search", "lookup"}},
	{1, trajectory.Train, 0, 0, "t1", "Paris", true, 1.2, trajectory.StopAnswer, []string{"search"}},
	{1, trajectory.Train, 0, 1, "t1", "Lyon", false, 0.1, trajectory.StopAnswer, []string{"lookup"}},
	{1, trajectory.Train, 1, 0, "t2", "Saint-Exupéry", true, 1.1, trajectory.StopAnswer, []string{"search", "lookup"}},
	{1, trajectory.Train, 1, 1, "t2", "", false, -0.5, trajectory.StopMaxTurns, []string{"search", "search", "search"}},
	{2, trajectory.Train, 0, 0, "t2", "Saint-Exupéry", true, 1.3, trajectory.StopAnswer, []string{"search", "lookup"}},
	{2, trajectory.Train, 0, 1, "t2", "Antoine", false, 0.2, trajectory.StopAnswer, []string{"search"}},
	{2, trajectory.Train, 1, 0, "t1", "Paris", true, 1.25, trajectory.StopAnswer, nil},
	{2, trajectory.Train, 1, 1, "t1", "Marseille", false, 0.0, trajectory.StopNoToolCall, nil},
	{2, trajectory.Eval, 0, 0, "t1", "Paris", true, 1.0, trajectory.StopAnswer, []string{"search"}},
	{2, trajectory.Eval, 1, 0, "t2", "Saint-Exupéry", true, 1.0, trajectory.StopAnswer, []string{"search", "lookup"}},
}

// fixtureTraj builds a row's trajectory on trajectorytest.Full's tokens:
// 6 tokens, mask 0 0 0 1 1 0, advantages 0 0 0 0.75 -0.75 0, behaviour
// logprobs 0 0 0 -0.125 -3.5 0, training logprobs 0 0 0 -0.25 -3.25 0,
// entropies 0 0 0 1.5 0.0625 0. Iteration 0's trajectories have no
// training logprobs or entropies (no update ran on them).
func fixtureTraj(r fixtureRow) *trajectory.Trajectory {
	t := trajectorytest.Full()
	t.ID = fmt.Sprintf("%d-%s-%d-%d", r.iter, r.split, r.group, r.sample)
	t.Iteration, t.Split, t.Group, t.Sample = r.iter, r.split, r.group, r.sample
	t.TaskID, t.Dataset, t.Question, t.Gold = r.task, "demo", questions[r.task], nil
	t.Answer, t.Correct, t.Reward, t.Outcome, t.Stop, t.Error = r.answer, r.correct, r.reward, r.reward, r.stop, ""
	t.Components = map[string]float64{"em": map[bool]float64{true: 1, false: 0}[r.correct], "format": r.reward - 1}
	t.Turns = nil
	for i, tool := range r.tools {
		t.Turns = append(t.Turns, trajectory.Turn{Text: fmt.Sprintf("<tool_call>%s</tool_call>", tool), GenTokens: 2,
			Calls: []trajectory.ToolCall{{Name: tool, Args: fmt.Sprintf(`{"query":"q%d"}`, i), Result: "result of " + tool,
				OK: tool != "lookup", LatencyMS: 12.5}}})
	}
	if r.stop == trajectory.StopAnswer || r.stop == trajectory.StopNoToolCall {
		t.Turns = append(t.Turns, trajectory.Turn{Text: "<answer>" + r.answer + "</answer>", GenTokens: 2})
	}
	if r.iter == 0 {
		t.TrainLogprobs, t.Entropies = nil, nil
	}
	return t
}

// fixtureMetrics are the iterations' metrics: the baselines at 0, a
// training reward and entropy at 1 and 2, an evaluation at 2.
var fixtureMetrics = map[int]map[string]float64{
	0: {metric.Eval + metric.EM: 0.5, metric.Eval + metric.F1: 0.6, metric.NaiveRAG + metric.EM: 0.25},
	1: {metric.RewardMean: 0.475, metric.Entropy: 1.2},
	2: {metric.RewardMean: 0.6875, metric.Entropy: 0.9, metric.Eval + metric.EM: 1, metric.Eval + metric.F1: 1},
}

// writeFixture writes the fixture store as run name into dir/name/store.db
// and closes it, iterations up to last.
func writeFixture(t testing.TB, dir, name string, last int) string {
	t.Helper()
	path := filepath.Join(dir, name, "store.db")
	s, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRun(store.RunInfo{Name: name, ConfigJSON: `{"algorithm":{"estimator":"grpo"}}`}); err != nil {
		t.Fatal(err)
	}
	writeIterations(t, s, 0, last)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeIterations writes the fixture's iterations first to last into s.
func writeIterations(t testing.TB, s *store.Store, first, last int) {
	t.Helper()
	for it := first; it <= last; it++ {
		var trs []*trajectory.Trajectory
		for _, r := range fixtureRows {
			if r.iter == it {
				trs = append(trs, fixtureTraj(r))
			}
		}
		if err := s.WriteIteration(it, fixtureMetrics[it], trs); err != nil {
			t.Fatal(err)
		}
	}
}

// newTestServer serves sources on a test server.
func newTestServer(t testing.TB, sources ...Source) *httptest.Server {
	t.Helper()
	srv, err := New(sources)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		ts.Close()
		srv.Close()
	})
	return ts
}

// get fetches url and returns the status and body.
func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}
