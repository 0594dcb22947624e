package store

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// openTemp opens a store under a fresh temporary directory (in the
// runs/<name>/store.db layout) and closes it when the test ends.
func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "runs", "test", "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// synthTraj builds a deterministic trajectory of nTok tokens and nTurns
// turns with every field set: a 100-token prompt (mask 0), then per turn a
// run of generated tokens (mask 1) followed by an observation (mask 0).
func synthTraj(iter int, split trajectory.Split, group, sample, nTok, nTurns int) *trajectory.Trajectory {
	const prompt = 100
	t := &trajectory.Trajectory{
		ID: fmt.Sprintf("%d-%s-%d-%d", iter, split, group, sample), TaskID: fmt.Sprintf("task-%d", group),
		Dataset: "hotpotqa", Hops: 2, Group: group, Sample: sample, Split: split, Iteration: iter,
		PolicyVersion: iter, Question: "Which river flows through the capital of France?",
		Gold: []string{"Seine", "the Seine"}, Answer: "Seine", Correct: true, Outcome: 1, Reward: 1.25,
		Components: map[string]float64{"em": 1, "format": 0.25}, Stop: trajectory.StopAnswer, DurationMS: 1234.5,
		PromptLen: prompt, Tokens: make([]int32, nTok), Logprobs: make([]float32, nTok), Mask: make([]uint8, nTok),
		TurnOf: make([]int16, nTok), Values: make([]float32, nTok), Advantages: make([]float32, nTok), Returns: make([]float32, nTok),
	}
	per := max((nTok-prompt)/max(nTurns, 1), 1)
	for i := range nTok {
		t.Tokens[i] = int32(i*7 + group)
		t.TurnOf[i] = -1
		if i >= prompt {
			k := (i - prompt) / per
			t.TurnOf[i] = int16(min(k, nTurns-1))
			if (i-prompt)%per < per/2 {
				t.Mask[i] = 1
				t.Logprobs[i] = -float32(i%50) / 100
			}
		}
		t.Values[i] = float32(i) / 1000
		t.Advantages[i] = float32(sample) - 0.5
		t.Returns[i] = 1 - float32(i)/float32(nTok)
	}
	for k := range nTurns {
		t.Turns = append(t.Turns, trajectory.Turn{
			Text: fmt.Sprintf("<think>step %d</think><tool_call>{\"name\":\"search\"}</tool_call>", k), GenTokens: per / 2,
			ProcessReward: 0.1, LatencyMS: 12.5, Calls: []trajectory.ToolCall{{Name: "search", Args: fmt.Sprintf(`{"query":"q%d"}`, k),
				Result: "Paris is on the Seine.", OK: true, LatencyMS: 12.5}},
		})
	}
	return t
}

// synthBatch builds n trajectories of one iteration, groups of 4 samples.
func synthBatch(iter, n, nTok, nTurns int) []*trajectory.Trajectory {
	ts := make([]*trajectory.Trajectory, n)
	for i := range ts {
		ts[i] = synthTraj(iter, trajectory.Train, i/4, i%4, nTok, nTurns)
	}
	return ts
}
