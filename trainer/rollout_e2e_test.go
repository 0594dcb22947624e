package trainer

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/trainer/learner"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

// End to end through the real pieces: a tiny random model, the synthetic
// world's word-level tokenizer and chat format, ToolEnv with the FTS5 search
// tool. Trajectories are well-formed, and the behaviour log-probabilities
// recorded while sampling equal the training forward's on the same tokens
// (within 1e-4): the check that PPO ratios start at 1.
func TestRolloutLogprobsMatchTrainingForward(t *testing.T) {
	cfg := smallConfig(t.TempDir())
	cfg.SFT.Demos = 0
	// Long, tool-heavy episodes from an untrained model: sample hot.
	cfg.Rollout.Temperature = 1.3
	cfg.Env.MaxTurnTokens = 24
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	reqs := []rollout.Request{}
	for i, task := range tr.data.Train[:6] {
		reqs = append(reqs, rollout.Request{Task: task, Group: i, Samples: 2})
	}
	// An untrained model rarely writes a valid tool call, so the first two
	// turns are handed to the real ToolEnv as a search for the question
	// (the sampled tokens stay as sampled): real observations get prefilled
	// mid-trajectory.
	factory := func(task envs.Task) (rollout.Setup, error) {
		s, err := tr.agent.Episode(task)
		s.Env = &searchFirst{Env: s.Env, query: task.Question}
		return s, err
	}
	trs, st, err := rollout.Run(context.Background(), tr.sampler.Decoder(), tr.agent.Chat, factory, reqs, tr.rolloutOptions(1, trajectory.Train,
		rollout.Options{Sampling: decoding.Sampling{Temperature: cfg.Rollout.Temperature}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(trs) != 12 || st.Generated == 0 {
		t.Fatalf("%d trajectories, %d tokens generated", len(trs), st.Generated)
	}
	for _, x := range trs {
		checkInvariants(t, x)
		if len(x.Turns) < 3 || !x.Turns[0].ToolsOK() || !strings.Contains(x.Turns[0].Calls[0].Result, "Doc 1") {
			t.Fatalf("%s: %d turns, first %+v", x.ID, len(x.Turns), x.Turns[0])
		}
	}
	old, err := learner.TokenLogprobs(nil, tr.models.learner.Policy(), trs, cfg.Rollout.Temperature, 4)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for i, x := range trs {
		for j, m := range x.Mask {
			if m == 1 {
				worst = math.Max(worst, math.Abs(float64(x.Logprobs[j]-old[i][j])))
			}
		}
	}
	if worst > 1e-4 {
		t.Fatalf("behaviour and recomputed logprobs differ by up to %g", worst)
	}
	t.Logf("%d trajectories, max |behaviour - recomputed| = %.2e", len(trs), worst)
}

// searchFirst turns the first two turns into searches for the question.
type searchFirst struct {
	rollout.Env
	query string
	turns int
}

func (s *searchFirst) Step(ctx context.Context, a envs.Action) (envs.StepResult, error) {
	s.turns++
	if s.turns <= 2 {
		b, _ := json.Marshal(map[string]any{"name": "search", "arguments": map[string]string{"query": s.query}})
		a.Text = "<tool_call>\n" + string(b) + "\n</tool_call>"
		a.TurnTruncated = false
	}
	return s.Env.Step(ctx, a)
}
