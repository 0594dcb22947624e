package store

import (
	"github.com/agentrl/agentrl/envs/reward"

	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// exampleTask is one question of the example store.
type exampleTask struct {
	id, dataset, question string
	hops                  int
	gold                  []string
}

var exampleTasks = map[string]exampleTask{
	"nq-1": {"nq-1", "nq", "What is the capital of France?", 1, []string{"Paris"}},
	"hp-2": {"hp-2", "hotpotqa", "In which year did the ship Margaret Brown survived sink?", 2, []string{"1912"}},
	"mu-3": {"mu-3", "musique", "Who wrote the first program for the engine Charles Babbage designed?", 3, []string{"Ada Lovelace", "Augusta Ada King"}},
}

// exampleRow describes one trajectory of the example store. turns lists the
// turns: S search, L lookup, P an unparsed tool call, A the answer turn;
// + the call succeeded, - it failed; a turn of several calls lists them
// together (S+L+S-). right is the outcome judged by hand.
type exampleRow struct {
	iter          int
	split         trajectory.Split
	group, sample int
	task, turns   string
	answer        string
	stop          trajectory.StopReason
	right         bool
}

// exampleRows: three iterations, each with 2 train groups of 2 samples and
// one greedy eval sample per task.
var exampleRows = []exampleRow{
	{0, trajectory.Train, 0, 0, "nq-1", "S+ A", "Paris", trajectory.StopAnswer, true},
	{0, trajectory.Train, 0, 1, "nq-1", "A", "Lyon", trajectory.StopAnswer, false},
	{0, trajectory.Train, 1, 0, "hp-2", "S+ S+ S+", "", trajectory.StopMaxTurns, false},
	{0, trajectory.Train, 1, 1, "hp-2", "P P P", "", trajectory.StopMaxTurns, false},
	{0, trajectory.Eval, 0, 0, "nq-1", "S+ A", "Paris", trajectory.StopAnswer, true},
	{0, trajectory.Eval, 1, 0, "hp-2", "S+ L- A", "1911", trajectory.StopAnswer, false},
	{0, trajectory.Eval, 2, 0, "mu-3", "S- A", "Charles Babbage", trajectory.StopAnswer, false},

	{1, trajectory.Train, 0, 0, "nq-1", "S+ A", "paris", trajectory.StopAnswer, true},
	{1, trajectory.Train, 0, 1, "nq-1", "S+ A", "Paris.", trajectory.StopAnswer, true},
	{1, trajectory.Train, 1, 0, "hp-2", "S+ L+ A", "1912", trajectory.StopAnswer, true},
	{1, trajectory.Train, 1, 1, "hp-2", "S+ S+ S+", "", trajectory.StopMaxTurns, false},
	{1, trajectory.Eval, 0, 0, "nq-1", "S+ A", "Paris", trajectory.StopAnswer, true},
	{1, trajectory.Eval, 1, 0, "hp-2", "S+ L+ A", "1912", trajectory.StopAnswer, true},
	{1, trajectory.Eval, 2, 0, "mu-3", "S+ S- A", "Charles Babbage", trajectory.StopAnswer, false},

	{2, trajectory.Train, 0, 0, "mu-3", "S+ L+ A", "Ada Lovelace", trajectory.StopAnswer, true},
	{2, trajectory.Train, 0, 1, "mu-3", "S+ L+ A", "Augusta Ada King", trajectory.StopAnswer, true},
	{2, trajectory.Train, 1, 0, "hp-2", "S+ L+ A", "1912", trajectory.StopAnswer, true},
	{2, trajectory.Train, 1, 1, "hp-2", "S+L+S- L-", "", trajectory.StopMaxTokens, false},
	{2, trajectory.Eval, 0, 0, "nq-1", "A", "Paris", trajectory.StopAnswer, true},
	{2, trajectory.Eval, 1, 0, "hp-2", "S+ L+ A", "1912", trajectory.StopAnswer, true},
	{2, trajectory.Eval, 2, 0, "mu-3", "S+ L+ A", "Ada Lovelace", trajectory.StopAnswer, true},
}

// exampleTraj builds the trajectory a row describes. Rewards: outcome 1 when
// right, else 0; process reward +0.1 per successful tool call, -0.1 per
// failed or unparsed one; total = outcome + process rewards. Evidence: the
// task's supporting passages are as many as its hops, and each successful
// search retrieves the next one (lookups retrieve none). Tokens: a
// 4-token prompt, 3 generated tokens per turn, 2 observation tokens after
// each turn with tool calls. Each call takes 10 ms.
func exampleTraj(r exampleRow) *trajectory.Trajectory {
	task := exampleTasks[r.task]
	t := &trajectory.Trajectory{
		ID: fmt.Sprintf("%d-%s-%d-%d", r.iter, r.split, r.group, r.sample), TaskID: task.id, Dataset: task.dataset,
		Hops: task.hops, Group: r.group, Sample: r.sample, Split: r.split, Iteration: r.iter, PolicyVersion: r.iter,
		Question: task.question, Gold: task.gold, Answer: r.answer, Correct: reward.Correct(r.answer, task.gold), Stop: r.stop, DurationMS: 100,
		PromptLen: 4, Tokens: []int32{1, 2, 3, 4}, Logprobs: make([]float32, 4), Mask: make([]uint8, 4),
		TurnOf: []int16{-1, -1, -1, -1}, Support: task.hops,
	}
	if r.right {
		t.Outcome = 1
	}
	t.Reward = t.Outcome
	for k, spec := range strings.Fields(r.turns) {
		u := trajectory.Turn{GenTokens: 3}
		t.Tokens = append(t.Tokens, 10, 11, 12)
		t.Logprobs = append(t.Logprobs, -0.5, -0.5, -0.5)
		t.Mask = append(t.Mask, 1, 1, 1)
		t.TurnOf = append(t.TurnOf, int16(k), int16(k), int16(k))
		switch spec {
		case "A":
			u.Text = "<answer>" + r.answer + "</answer>"
		case "P":
			u.Text, u.ProcessReward = "<tool_call>{search</tool_call>", -0.1
			u.Calls = []trajectory.ToolCall{{ParseError: "invalid JSON", Result: "error: invalid tool call"}}
		default:
			u.LatencyMS = 10
			for i := 0; i < len(spec); i += 2 {
				c := trajectory.ToolCall{Name: map[byte]string{'S': "search", 'L': "lookup"}[spec[i]], Args: `{"query":"x"}`,
					Result: "no result", OK: spec[i+1] == '+', LatencyMS: 10}
				reward := -0.1
				if c.OK {
					c.Result, reward = "a passage", 0.1
				}
				if c.OK && c.Name == "search" && t.Evidence < t.Support {
					u.Evidence++
					t.Evidence++
				}
				u.Text += "<tool_call>" + c.Args + "</tool_call>"
				u.ProcessReward += reward
				u.Calls = append(u.Calls, c)
			}
		}
		if spec != "A" {
			t.Tokens = append(t.Tokens, 20, 21)
			t.Logprobs = append(t.Logprobs, 0, 0)
			t.Mask = append(t.Mask, 0, 0)
			t.TurnOf = append(t.TurnOf, int16(k), int16(k))
		}
		t.Reward += u.ProcessReward
		t.Turns = append(t.Turns, u)
	}
	return t
}

// exampleStore writes the example store: run "demo", iterations 0..2.
func exampleStore(t *testing.T) *Store {
	s := openTemp(t)
	if err := s.BeginRun(RunInfo{Name: "demo", ConfigJSON: `{"algo":"grpo"}`, GitRev: "0123abc"}); err != nil {
		t.Fatal(err)
	}
	for it := range 3 {
		var batch []*trajectory.Trajectory
		for _, r := range exampleRows {
			if r.iter == it {
				batch = append(batch, exampleTraj(r))
			}
		}
		if err := s.WriteIteration(it, map[string]float64{"loss": 0.5 - 0.1*float64(it)}, batch); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// exampleWant holds, per example query of docs/store.md (in order), the
// result worked out by hand from exampleRows, as "col | col" lines.
var exampleWant = [][]string{
	// 1. Which tools fail most. Counting the S/L/P calls in exampleRows:
	// search: ok 6 (it 0) + 9 (it 1) + 6 (it 2) = 21, failed 1 (it 0) + 1 (it 1) + 1 (it 2) = 3,
	// 24 calls, 21/24 = 0.875; lookup: ok 0 + 2 + 6 = 8, failed 1 + 0 + 1 = 2, 10 calls,
	// 8/10 = 0.8; unparsed: the three P of 0-train-1-1. Ties on failures go by success rate.
	{"tool | calls | failures | success_rate",
		"(unparsed) | 3 | 3 | 0",
		"search | 24 | 3 | 0.875",
		"lookup | 10 | 2 | 0.8"},
	// 2. Accuracy by number of turns. 1 turn: 0-train-0-1 wrong, 2-eval-0-0 right.
	// 2 turns: 0-train-0-0, 0-eval-0-0, 1-train-0-0, 1-train-0-1, 1-eval-0-0 right;
	// 0-eval-2-0, 2-train-1-1 wrong: 5/7. 3 turns: the other 12, of which
	// 1-train-1-0, 1-eval-1-0 and the five of iteration 2 are right: 7/12.
	{"n_turns | n | correct | accuracy",
		"1 | 2 | 1 | 0.5",
		"2 | 7 | 5 | 0.714",
		"3 | 12 | 7 | 0.583"},
	// 3. Reward by iteration and split (reward = outcome + 0.1 per good call - 0.1 per bad one;
	// the S+L+S- turn of 2-train-1-1 earns 0.1 + 0.1 - 0.1 = 0.1).
	// it 0 train: 1.1 + 0 + 0.3 - 0.3 = 1.1 / 4; eval: 1.1 + 0 - 0.1 = 1.0 / 3.
	// it 1 train: 1.1 + 1.1 + 1.2 + 0.3 = 3.7 / 4; eval: 1.1 + 1.2 + 0 = 2.3 / 3.
	// it 2 train: 1.2 * 3 + 0 = 3.6 / 4; eval: 1.0 + 1.2 + 1.2 = 3.4 / 3.
	{"iteration | split | n | reward | accuracy",
		"0 | eval | 3 | 0.333 | 0.333",
		"0 | train | 4 | 0.275 | 0.25",
		"1 | eval | 3 | 0.767 | 0.667",
		"1 | train | 4 | 0.925 | 0.75",
		"2 | eval | 3 | 1.133 | 1",
		"2 | train | 4 | 0.9 | 0.75"},
	// 4. Eval answers that changed: hp-2 1911 -> 1912 (it 0 -> 1), mu-3
	// Charles Babbage -> Ada Lovelace (it 1 -> 2); nq-1 says Paris throughout.
	{"task_id | from_iteration | to_iteration | old_answer | new_answer | now_correct",
		"hp-2 | 0 | 1 | 1911 | 1912 | 1",
		"mu-3 | 1 | 2 | Charles Babbage | Ada Lovelace | 1"},
	// 5. Truncation rate of training episodes: it 0 two max_turns, it 1 one
	// max_turns, it 2 one max_tokens, of 4 each.
	{"iteration | n | truncated | rate",
		"0 | 4 | 2 | 0.5",
		"1 | 4 | 1 | 0.25",
		"2 | 4 | 1 | 0.25"},
	// 6. Accuracy by hops over all iterations. 1 hop (nq-1): eval 3/3, train
	// 3/4 (only 0-train-0-1 wrong). 2 hops (hp-2): eval 2/3, train 2/6.
	// 3 hops (mu-3): eval 1/3, train 2/2.
	{"hops | split | n | accuracy",
		"1 | eval | 3 | 1",
		"1 | train | 4 | 0.75",
		"2 | eval | 3 | 0.667",
		"2 | train | 6 | 0.333",
		"3 | eval | 3 | 0.333",
		"3 | train | 2 | 1"},
	// 7. Turns with several calls: only the first turn of 2-train-1-1 (S+L+S-),
	// its calls in order.
	{"id | turn | call | tool | ok",
		"2-train-1-1 | 0 | 0 | search | 1",
		"2-train-1-1 | 0 | 1 | lookup | 1",
		"2-train-1-1 | 0 | 2 | search | 0"},
	// 8. Evidence by hops over the eval episodes, each task's support its
	// hop count and one passage per successful search: nq-1 (1 hop) S+ A,
	// S+ A, A: 1, 1, 0 -> 2/3, two complete; hp-2 (2 hops) S+ L- A, S+ L+
	// A, S+ L+ A: 1 of 2 each -> 0.5, none complete; mu-3 (3 hops) S- A,
	// S+ S- A, S+ L+ A: 0, 1, 1 of 3 -> 2/9 = 0.222, none complete.
	{"hops | n | recall | complete",
		"1 | 3 | 0.667 | 2",
		"2 | 3 | 0.5 | 0",
		"3 | 3 | 0.222 | 0"},
}

// storeDoc is the store's user page, with the example queries; the
// schema itself is SCHEMA.md, beside this file.
const storeDoc = "../../docs/store.md"

// docExample is one example query of docs/store.md and the result it shows.
type docExample struct{ sql, result string }

// docExamples extracts the ```sql example blocks of docs/store.md, each
// with the ```text block that follows it. It skips the test when the
// package is built outside the repository (no docs beside it).
func docExamples(t *testing.T) []docExample {
	t.Helper()
	b, err := os.ReadFile(storeDoc)
	if err != nil {
		t.Skipf("docs/store.md not found beside the module (%v): no example queries to run", err)
	}
	re := regexp.MustCompile("(?s)```sql example\n(.*?)```\\s*```text\n(.*?)```")
	var out []docExample
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		out = append(out, docExample{strings.TrimSpace(m[1]), strings.TrimSpace(m[2])})
	}
	return out
}

// formatResult renders a query result the way docs/store.md shows it.
func formatResult(cols []string, rows [][]any) string {
	lines := []string{strings.Join(cols, " | ")}
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, v := range r {
			switch v := v.(type) {
			case nil:
				cells[i] = "NULL"
			case int64:
				cells[i] = strconv.FormatInt(v, 10)
			case float64:
				cells[i] = strconv.FormatFloat(v, 'f', -1, 64)
			default:
				cells[i] = fmt.Sprint(v)
			}
		}
		lines = append(lines, strings.Join(cells, " | "))
	}
	return strings.Join(lines, "\n")
}

// The example queries of docs/store.md return, on the example store, what
// the page shows and what was worked out by hand.
func TestStoreDocExamples(t *testing.T) {
	examples := docExamples(t)
	s := exampleStore(t)
	if len(examples) != len(exampleWant) {
		t.Fatalf("docs/store.md has %d example queries, the test expects %d", len(examples), len(exampleWant))
	}
	for i, ex := range examples {
		cols, rows, err := QueryReadOnly(s.Path(), ex.sql)
		if err != nil {
			t.Errorf("example %d: %v", i+1, err)
			continue
		}
		got := formatResult(cols, rows)
		if want := strings.Join(exampleWant[i], "\n"); got != want {
			t.Errorf("example %d returns\n%s\nwant (worked out by hand)\n%s", i+1, got, want)
		}
		if got != ex.result {
			t.Errorf("example %d returns\n%s\nbut docs/store.md shows\n%s", i+1, got, ex.result)
		}
	}
}

func TestMetricsSummaryColumns(t *testing.T) {
	s := exampleStore(t)
	ms, err := s.Metrics()
	if err != nil || len(ms) != 3 {
		t.Fatalf("Metrics: %d, %v", len(ms), err)
	}
	// Means worked out in exampleWant[2]; eval accuracy 1/3, 2/3, 3/3.
	want := []struct{ train, eval, acc, loss float64 }{
		{1.1 / 4, 1.0 / 3, 1.0 / 3, 0.5}, {3.7 / 4, 2.3 / 3, 2.0 / 3, 0.4}, {3.6 / 4, 3.4 / 3, 1, 0.3},
	}
	for i, m := range ms {
		w := want[i]
		if m.Iteration != i || m.NTrain != 4 || m.NEval != 3 || !near(m.RewardMean, w.train) ||
			!near(m.EvalRewardMean, w.eval) || !near(m.EvalAccuracy, w.acc) || !near(m.Metrics["loss"], w.loss) || m.CreatedAt.IsZero() {
			t.Errorf("iteration %d: %+v; want train %v eval %v accuracy %v loss %v", i, m, w.train, w.eval, w.acc, w.loss)
		}
	}
}

func TestList(t *testing.T) {
	s := exampleStore(t)
	ids := func(f ListFilter) string {
		t.Helper()
		got, err := s.List(f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range got {
			out = append(out, m.ID)
		}
		return strings.Join(out, " ")
	}
	two := 2
	for _, c := range []struct {
		f    ListFilter
		want string
	}{
		// The wrong eval answers of exampleRows.
		{ListFilter{Split: trajectory.Eval, Where: "correct = 0"}, "0-eval-1-0 0-eval-2-0 1-eval-2-0"},
		{ListFilter{Iteration: &two, Split: trajectory.Train, Limit: 2}, "2-train-0-0 2-train-0-1"},
		// The two one-turn episodes.
		{ListFilter{Where: "n_turns = ?", Args: []any{1}}, "0-train-0-1 2-eval-0-0"},
	} {
		if got := ids(c.f); got != c.want {
			t.Errorf("List(%+v) = %s, want %s", c.f, got, c.want)
		}
	}
	got, err := s.List(ListFilter{Where: "id = '1-train-0-1'"})
	if err != nil || len(got) != 1 {
		t.Fatalf("List by id: %v, %v", got, err)
	}
	// 1-train-0-1: "S+ A", answer "Paris." (right), 4 + 5 + 3 = 12 tokens, 6 generated.
	want := Summary{ID: "1-train-0-1", Iteration: 1, Split: trajectory.Train, TaskID: "nq-1", Dataset: "nq", Hops: 1,
		Group: 0, Sample: 1, Answer: "Paris.", Correct: true, Outcome: 1, Reward: 1.1, Stop: trajectory.StopAnswer,
		Turns: 2, Tokens: 12, ActionTokens: 6, DurationMS: 100}
	if got[0] != want {
		t.Errorf("summary %+v, want %+v", got[0], want)
	}
}

// near compares floats that went through different summation orders.
func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
