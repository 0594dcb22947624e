package calculator_test

import (
	"context"
	"testing"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/tools/calculator"
	"github.com/agentrl/agentrl/trajectory"
)

// A whole episode with the real calculator.
func TestEpisodeWithCalculator(t *testing.T) {
	tools := []envs.Tool{calculator.New()}
	task := envs.Task{ID: "c1", Question: "What is 2 to the 10th?", Answers: []string{"1024"}}
	e, err := envs.NewToolEnv(task, tools, envs.DefaultEnvConfig())
	if err != nil {
		t.Fatal(err)
	}
	turns := []struct{ text, response string }{
		{"<think>divide</think>\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"1/0\"}}\n</tool_call>",
			`Error: cannot evaluate "1/0": division by zero at position 2`},
		{"<think>power</think>\n<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2^10\"}}\n</tool_call>",
			"1024"},
	}
	for _, turn := range turns {
		res, err := e.Step(context.Background(), envs.Action{Text: turn.text})
		if err != nil || len(res.Responses) != 1 || res.Responses[0] != turn.response {
			t.Fatalf("Step: %+v, %v; want response %q", res, err, turn.response)
		}
	}
	res, err := e.Step(context.Background(), envs.Action{Text: "<think>done</think>\n<answer>1024</answer>"})
	if err != nil || res.Stop != trajectory.StopAnswer {
		t.Fatalf("answer: %+v, %v", res, err)
	}
	// em 1, format 1 (both earlier turns parsed): 1*1 + 0.1*1.
	if total, _ := e.Outcome(); total < 1.1-1e-12 || total > 1.1+1e-12 {
		t.Errorf("outcome %v, want 1.1", total)
	}
}
