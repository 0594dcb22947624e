package results

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
)

// episode is an evaluation trajectory of iteration it with the given id
// suffix, hop count (and as many supporting passages), answer and one
// search per result; a result that holds "!" retrieved a supporting
// passage.
func episode(it int, id string, hops int, answer string, results ...string) *trajectory.Trajectory {
	t := &trajectory.Trajectory{ID: fmt.Sprintf("%d-eval-%s", it, id), TaskID: id, Hops: hops, Support: hops, Split: trajectory.Eval,
		Iteration: it, Question: "q", Answer: answer, Stop: trajectory.StopAnswer,
		PromptLen: 1, Tokens: []int32{1, 2}, Logprobs: []float32{0, -0.1}, Mask: []uint8{0, 1}, TurnOf: []int16{-1, 0}}
	for _, r := range results {
		u := trajectory.Turn{GenTokens: 1, Calls: []trajectory.ToolCall{{Name: "search", Args: `{"query":"q"}`, OK: true, Result: r}}}
		if strings.Contains(r, "!") {
			u.Evidence++
			t.Evidence++
		}
		t.Turns = append(t.Turns, u)
	}
	t.Turns = append(t.Turns, trajectory.Turn{GenTokens: 1})
	return t
}

// The behaviour of a store's in-domain evaluations, worked by hand. At
// iteration 0 (the base tool-calling model): a 1-hop episode whose one
// search returned its answer, a 2-hop one with a search that did not, a
// 3-hop one with none: 2/3 searches an episode; of the two multi-hop
// episodes one searched once; 1/3 with the answer in a result, 1/3
// without a search. At iteration 2 (the last, the RL row): a 2-hop
// episode with two searches, the second returning its answer; a 3-hop one
// with three; a 1-hop one with an empty answer (never "in" a result): 2
// searches an episode, the multi-hop ones half twice and half three
// times. Evidence, over the multi-hop episodes: at iteration 0 the 2-hop
// one found 1 of 2 and the 3-hop one none (mean 0.25); at iteration 2 the
// 2-hop one both (1), the 3-hop one 1 of 3 (mean 2/3). Naive RAG's and
// out-of-domain episodes, and iteration 1, are left out.
func TestReadBehaviour(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRun(store.RunInfo{Name: "r", ConfigJSON: "{}", GitRev: "x", Start: time.Now()}); err != nil {
		t.Fatal(err)
	}
	iters := map[int][]*trajectory.Trajectory{
		0: {episode(0, "0-0", 1, "Gimpa", "Doc 1: Tino was born in Gimpa."), episode(0, "1-0", 2, "Zifa", "Doc 1: nothing!"),
			episode(0, "2-0", 3, "Memza"), episode(0, "rag-3-0", 2, "Zifa", "Zifa", "Zifa", "Zifa")},
		1: {episode(1, "0-0", 1, "Gimpa")},
		2: {episode(2, "0-0", 2, "Kado", "Doc 1: Rilpo!", "Doc 1: kado is here!"), episode(2, "1-0", 3, "Tato", "a", "b!", "c"),
			episode(2, "2-0", 1, "", "anything"), episode(2, "ood-7-0", 2, "Kado", "Kado")},
	}
	for it := 0; it <= 2; it++ {
		if err := s.WriteIteration(it, map[string]float64{}, iters[it]); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	got, err := ReadBehaviour(path, "PPO")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Behaviour{
		"Base Tool Call": {Episodes: 3, Searches: 2.0 / 3, MultiHop1: 0.5, Evidence: 0.25, AnswerInResult: 1.0 / 3, NoSearch: 1.0 / 3},
		"PPO":            {Episodes: 3, Searches: 2, MultiHop2: 0.5, MultiHop3: 0.5, Evidence: 2.0 / 3, AnswerInResult: 1.0 / 3},
	}
	if len(got) != len(want) {
		t.Fatalf("methods %v, want %v", got, want)
	}
	for m, w := range want {
		g := got[m]
		for _, p := range [][2]float64{{g.Searches, w.Searches}, {g.MultiHop1, w.MultiHop1}, {g.MultiHop2, w.MultiHop2},
			{g.MultiHop3, w.MultiHop3}, {g.Evidence, w.Evidence}, {g.AnswerInResult, w.AnswerInResult}, {g.NoSearch, w.NoSearch}} {
			if math.Abs(p[0]-p[1]) > 1e-12 || g.Episodes != w.Episodes {
				t.Errorf("%s: %+v, want %+v", m, g, w)
				break
			}
		}
	}
}
