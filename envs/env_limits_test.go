package envs

import (
	"context"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

func stepAction(t *testing.T, e *ToolEnv, a Action) StepResult {
	t.Helper()
	res, err := e.Step(context.Background(), a)
	if err != nil {
		t.Fatalf("Step(%+v): %v", a, err)
	}
	return res
}

// AwaitingAction --tool call on the last allowed turn--> Done(max_turns),
// without running the tool.
func TestMaxTurns(t *testing.T) {
	cfg := testConfig()
	cfg.MaxTurns = 2
	echo := &echoTool{}
	e := newEnv(t, cfg, echo)
	if res := step(t, e, call("echo", `{"text":"a"}`)); res.Done {
		t.Fatalf("turn 1 ended the episode: %+v", res)
	}
	res := step(t, e, call("echo", `{"text":"b"}`))
	if !res.Done || res.Stop != trajectory.StopMaxTurns || len(res.Responses) != 0 || res.ProcessReward != 0 {
		t.Errorf("turn 2: %+v", res)
	}
	if len(res.Calls) != 1 || res.Calls[0].Name != "echo" || res.Calls[0].Args != `{"text":"b"}` || res.Calls[0].Result != "" {
		t.Errorf("unrun call record %+v", res.Calls)
	}
	if echo.calls.Load() != 1 || e.State() != StateDone {
		t.Errorf("%d tool calls (want 1), state %v", echo.calls.Load(), e.State())
	}
}

// An answer on the last allowed turn is an answer, and a malformed call
// there ends the episode too.
func TestLastTurn(t *testing.T) {
	cfg := testConfig()
	cfg.MaxTurns = 1
	if res := step(t, newEnv(t, cfg, &echoTool{}), "<answer>Paris</answer>"); res.Stop != trajectory.StopAnswer {
		t.Errorf("answer on the last turn: %+v", res)
	}
	res := step(t, newEnv(t, cfg, &echoTool{}), "<tool_call>{bad}</tool_call>")
	if res.Stop != trajectory.StopMaxTurns || res.Calls[0].ParseError == "" || len(res.Responses) != 0 {
		t.Errorf("malformed call on the last turn: %+v", res)
	}
}

func TestMaxTokens(t *testing.T) {
	cfg := testConfig()
	cfg.MaxTokens = 100
	cases := []struct {
		name string
		a    Action
		stop trajectory.StopReason
		runs int32 // tool calls made
	}{
		{"call at the budget", Action{Text: call("echo", `{"text":"a"}`), TotalTokens: 100}, trajectory.StopMaxTokens, 0},
		{"call below the budget", Action{Text: call("echo", `{"text":"a"}`), TotalTokens: 99}, "", 1},
		{"answer over the budget", Action{Text: "<answer>Paris</answer>", TotalTokens: 150}, trajectory.StopAnswer, 0},
		{"nothing at the budget", Action{Text: "I was thinking", TotalTokens: 100}, trajectory.StopMaxTokens, 0},
		{"nothing below the budget", Action{Text: "I was thinking", TotalTokens: 99}, trajectory.StopNoToolCall, 0},
		{"empty action, budget spent by an observation", Action{TotalTokens: 120}, trajectory.StopMaxTokens, 0},
		{"turn cut in its thinking", Action{Text: "<think>first I", TurnTruncated: true, TotalTokens: 50}, trajectory.StopMaxTokens, 0},
		{"turn cut inside a call", Action{Text: "<tool_call>{\"name\": \"ec", TurnTruncated: true, TotalTokens: 50}, trajectory.StopMaxTokens, 0},
		{"cut turn with a complete call", Action{Text: call("echo", `{"text":"a"}`), TurnTruncated: true, TotalTokens: 50}, "", 1},
		{"cut turn with an answer", Action{Text: "<answer>Paris</answer> and", TurnTruncated: true, TotalTokens: 50}, trajectory.StopAnswer, 0},
		{"malformed call at the budget", Action{Text: "<tool_call>{}</tool_call>", TotalTokens: 100}, trajectory.StopMaxTokens, 0},
	}
	for _, c := range cases {
		echo := &echoTool{}
		e := newEnv(t, cfg, echo)
		res := stepAction(t, e, c.a)
		if res.Stop != c.stop || res.Done != (c.stop != "") || echo.calls.Load() != c.runs {
			t.Errorf("%s: stop %q done %v with %d tool calls; want %q with %d", c.name, res.Stop, res.Done, echo.calls.Load(), c.stop, c.runs)
		}
	}
	// The turn limit is checked before the budget.
	cfg.MaxTurns = 1
	if res := stepAction(t, newEnv(t, cfg, &echoTool{}), Action{Text: call("echo", `{"text":"a"}`), TotalTokens: 100}); res.Stop != trajectory.StopMaxTurns {
		t.Errorf("both limits: stop %q, want max_turns", res.Stop)
	}
}

// Repeats are penalised across and within turns, up to case and
// whitespace of the arguments.
func TestRepeatedCalls(t *testing.T) {
	e := newEnv(t, testConfig(), &echoTool{})
	steps := []struct {
		text string
		want float64
	}{
		{call("echo", `{"text":"Eiffel Tower"}`), 0.02},                                      // valid
		{call("echo", `{"text":"  eiffel   TOWER "}`), -0.05},                                // repeat: no valid credit
		{call("echo", `{"text":"Louvre"}`) + call("echo", `{"text":"louvre"}`), 0.02 - 0.05}, // one valid, one repeat
		{call("echo", `{"text":"Orsay"}`) + call("nope", `{}`), 0.02 - 0.05},                 // one valid, one invalid
	}
	for i, s := range steps {
		if res := step(t, e, s.text); !near(res.ProcessReward, s.want) {
			t.Errorf("turn %d: process reward %v, want %v", i+1, res.ProcessReward, s.want)
		}
	}
}

// Each supporting passage (Eiffel Tower, Paris) is rewarded once, the
// first time a call retrieves it.
func TestSupportRewardedOnce(t *testing.T) {
	e := newEnv(t, testConfig(), &echoTool{})
	steps := []struct {
		args string
		want float64
	}{
		{`{"text":"a","refs":["paris","Louvre"]}`, 0.02 + 0.05},          // Paris is new
		{`{"text":"b","refs":["Paris","Eiffel Tower"]}`, 0.02 + 0.05},    // Eiffel Tower is new
		{`{"text":"c","refs":["Eiffel Tower"]}`, 0.02},                   // nothing new
		{`{"text":"d","refs":["Gustave Eiffel","Champ de Mars"]}`, 0.02}, // no support
	}
	for i, s := range steps {
		res := step(t, e, call("echo", s.args))
		if !near(res.ProcessReward, s.want) {
			t.Errorf("turn %d: process reward %v, want %v", i+1, res.ProcessReward, s.want)
		}
		if i == 0 && (len(res.Calls[0].Refs) != 2 || res.Calls[0].Refs[0] != "paris") {
			t.Errorf("refs not recorded: %+v", res.Calls[0])
		}
	}
}
