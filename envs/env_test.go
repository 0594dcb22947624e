package envs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/trajectory"
)

// testConfig is the configuration the tests' numbers were worked out
// for: 6 turns, 8192 tokens, 4000 characters per observation, a short
// timeout, and process rewards of 0.02 per turn with a valid call, 0.05
// per new supporting passage, -0.05 per invalid or repeated call.
func testConfig() EnvConfig {
	c := DefaultEnvConfig()
	c.MaxTurns, c.MaxTokens, c.MaxObservationChars = 6, 8192, 4000
	c.ToolTimeout = 2 * time.Second
	r := &c.Rewards
	r.ValidCall, r.Support, r.InvalidCall, r.RepeatCall = 0.02, 0.05, -0.05, -0.05
	return c
}

var testTask = Task{ID: "t1", Question: "Where is the Eiffel Tower?", Answers: []string{"Paris", "Paris, France"},
	Support: []string{"Eiffel Tower", "Paris"}}

func newEnv(t *testing.T, cfg EnvConfig, tools ...Tool) *ToolEnv {
	t.Helper()
	e, err := NewToolEnv(testTask, tools, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// step runs one Step that must not fail.
func step(t *testing.T, e *ToolEnv, text string) StepResult {
	t.Helper()
	res, err := e.Step(context.Background(), Action{Text: text, Tokens: 10, TotalTokens: 100})
	if err != nil {
		t.Fatalf("Step(%q): %v", text, err)
	}
	return res
}

func call(name, args string) string {
	return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>"
}

func TestNewToolEnvRejects(t *testing.T) {
	mod := func(f func(*EnvConfig)) EnvConfig { c := testConfig(); f(&c); return c }
	cases := []struct {
		cfg   EnvConfig
		tools []Tool
		want  string
	}{
		{mod(func(c *EnvConfig) { c.MaxTurns = 0 }), nil, "max_turns is 0"},
		{mod(func(c *EnvConfig) { c.MaxTokens = -1 }), nil, "max_tokens is -1"},
		{mod(func(c *EnvConfig) { c.ToolTimeout = 0 }), nil, "tool_timeout is 0s"},
		{mod(func(c *EnvConfig) { c.MaxObservationChars = 10 }), nil, "max_observation_chars is 10"},
		{mod(func(c *EnvConfig) { c.Rewards.Scorer = "bleu" }), nil, `unknown answer metric "bleu"`},
		{testConfig(), []Tool{nil}, "tool 0: nil tool"},
		{testConfig(), []Tool{&echoTool{}, &echoTool{}}, `two tools are called "echo"`},
		{testConfig(), []Tool{badSchema{}}, "unsupported schema keyword"},
	}
	for _, c := range cases {
		_, err := NewToolEnv(testTask, c.tools, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "task t1") {
			t.Errorf("NewToolEnv: err = %v, want %q naming the task", err, c.want)
		}
	}
}

func TestStateNames(t *testing.T) {
	for s, want := range map[State]string{StateAwaitingAction: "awaiting_action", StateExecutingTools: "executing_tools", StateDone: "done", State(9): "unknown"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(s), s.String(), want)
		}
	}
}

// AwaitingAction --answer--> Done; Step after Done is an error that
// changes nothing.
func TestAnswerEndsEpisode(t *testing.T) {
	e := newEnv(t, testConfig(), &echoTool{})
	if e.State() != StateAwaitingAction || len(e.History()) != 0 {
		t.Fatalf("fresh env: state %v, %d turns", e.State(), len(e.History()))
	}
	res := step(t, e, "<think>I know it.</think>\n<answer> Paris </answer><|im_end|>")
	if !res.Done || res.Stop != trajectory.StopAnswer || res.Answer != "Paris" || res.ProcessReward != 0 || len(res.Responses) != 0 {
		t.Errorf("answer turn: %+v", res)
	}
	if e.State() != StateDone {
		t.Errorf("state %v, want done", e.State())
	}
	_, err := e.Step(context.Background(), Action{Text: "<answer>x</answer>"})
	if err == nil || !strings.Contains(err.Error(), "after the episode ended (answer)") {
		t.Errorf("step after done: err = %v", err)
	}
	if n := len(e.History()); n != 1 {
		t.Errorf("history has %d turns after a refused step, want 1", n)
	}
}

// AwaitingAction --no call, no answer--> Done(no_tool_call).
func TestNoToolCallEndsEpisode(t *testing.T) {
	e := newEnv(t, testConfig(), &echoTool{})
	res := step(t, e, "<think>Let me think about it.</think> I am not sure.")
	if !res.Done || res.Stop != trajectory.StopNoToolCall || res.Answer != "" {
		t.Errorf("got %+v", res)
	}
	if e.State() != StateDone {
		t.Errorf("state %v", e.State())
	}
}

// AwaitingAction --tool call--> ExecutingTools --> AwaitingAction.
func TestToolCallContinues(t *testing.T) {
	echo := &echoTool{}
	e := newEnv(t, testConfig(), echo)
	res := step(t, e, "<think>look</think>\n"+call("echo", `{"text": "hello"}`))
	if res.Done || res.Stop != "" || len(res.Responses) != 1 || res.Responses[0] != "hello" {
		t.Fatalf("got %+v", res)
	}
	c := res.Calls[0]
	if c.Name != "echo" || c.Args != `{"text":"hello"}` || c.Result != "hello" || !c.OK || c.ParseError != "" || c.LatencyMS <= 0 {
		t.Errorf("call record %+v", c)
	}
	if !near(res.ProcessReward, 0.02) { // one valid call: ValidCall
		t.Errorf("process reward %v, want 0.02", res.ProcessReward)
	}
	if e.State() != StateAwaitingAction || echo.calls.Load() != 1 {
		t.Errorf("state %v, %d calls", e.State(), echo.calls.Load())
	}
	h := e.History()
	if len(h) != 1 || h[0].GenTokens != 10 || h[0].Calls[0].Result != "hello" || !near(h[0].ProcessReward, 0.02) || h[0].LatencyMS <= 0 {
		t.Errorf("history %+v", h)
	}
}

func TestErrorObservationsContinue(t *testing.T) {
	cases := []struct {
		name   string
		text   string
		obs    string
		reward float64
	}{
		{"malformed call", `<tool_call>{"name": "echo", "arguments": {"text": "x"}</tool_call>`,
			"Error: tool call 1 is not valid JSON", -0.05},
		{"unknown tool", call("search", `{"query": "x"}`),
			`Error: unknown tool "search" (available: boom, echo, fail)`, -0.05},
		{"bad arguments", call("echo", `{"txt": "x"}`),
			`Error: invalid arguments for echo: arguments: missing required property "text"; arguments: unexpected property "txt" (allowed: refs, text)`, -0.05},
		{"tool error", call("fail", `{}`), "Error: no such page", -0.05},
		{"tool panic", call("boom", `{}`), "Error: tool boom failed unexpectedly (panic: index out of range)", 0},
	}
	for _, c := range cases {
		e := newEnv(t, testConfig(), &echoTool{}, failTool{}, panicTool{})
		res := step(t, e, c.text)
		if res.Done || len(res.Responses) != 1 || !strings.HasPrefix(res.Responses[0], c.obs) {
			t.Errorf("%s: got %+v, want a response starting %q", c.name, res, c.obs)
			continue
		}
		if res.Calls[0].OK || res.Calls[0].Result != res.Responses[0] {
			t.Errorf("%s: call record %+v", c.name, res.Calls[0])
		}
		if !near(res.ProcessReward, c.reward) {
			t.Errorf("%s: process reward %v, want %v", c.name, res.ProcessReward, c.reward)
		}
		if e.State() != StateAwaitingAction {
			t.Errorf("%s: state %v", c.name, e.State())
		}
	}
}

func TestParseErrorRecorded(t *testing.T) {
	e := newEnv(t, testConfig(), &echoTool{})
	res := step(t, e, `<tool_call>{"arguments": {}}</tool_call>`)
	c := res.Calls[0]
	if c.Name != "" || !strings.Contains(c.ParseError, `has no "name"`) || res.Responses[0] != "Error: "+c.ParseError {
		t.Errorf("got %+v", res)
	}
}

func TestHangingToolTimesOut(t *testing.T) {
	release := make(chan struct{})
	defer close(release) // let the abandoned goroutine finish
	cfg := testConfig()
	cfg.ToolTimeout = 50 * time.Millisecond
	e := newEnv(t, cfg, hangTool{release}, &echoTool{})
	done := make(chan StepResult, 1)
	go func() {
		res, _ := e.Step(context.Background(), Action{Text: call("hang", `{}`) + call("echo", `{"text":"fine"}`)})
		done <- res
	}()
	select {
	case res := <-done:
		if res.Done || res.Responses[0] != "Error: tool hang timed out after 50ms" || res.Responses[1] != "fine" {
			t.Errorf("got %+v", res)
		}
		if res.Calls[0].LatencyMS < 50 {
			t.Errorf("timed out after %v ms, before the timeout", res.Calls[0].LatencyMS)
		}
		if !near(res.ProcessReward, 0.02) { // the hang counts neither way; echo is valid
			t.Errorf("process reward %v, want 0.02", res.ProcessReward)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Step did not return although the tool hangs past its timeout")
	}
	if e.State() != StateAwaitingAction {
		t.Errorf("state %v", e.State())
	}
}

// A tool that honours its context and returns ctx.Err() at the deadline
// has timed out; it is not an invalid call.
func TestContextHonouringToolTimesOut(t *testing.T) {
	cfg := testConfig()
	cfg.ToolTimeout = 20 * time.Millisecond
	e := newEnv(t, cfg, waitTool{})
	res := step(t, e, call("wait", `{}`))
	if res.Responses[0] != "Error: tool wait timed out after 20ms" || res.ProcessReward != 0 {
		t.Errorf("got %+v", res)
	}
}

// Several calls run at the same time (the barrier only opens when both
// are running) and their responses keep call order.
func TestCallsRunConcurrentlyInOrder(t *testing.T) {
	e := newEnv(t, testConfig(), newBarrierTool(2))
	res := step(t, e, call("barrier", `{"id": 2}`)+"\n"+call("barrier", `{"id": 1}`))
	if len(res.Responses) != 2 || res.Responses[0] != "call 2" || res.Responses[1] != "call 1" {
		t.Errorf("responses %q, want [call 2, call 1]", res.Responses)
	}
}

// A Step while another runs is refused; State shows ExecutingTools.
func TestConcurrentStepRefused(t *testing.T) {
	g := gateTool{started: make(chan struct{}), open: make(chan struct{})}
	e := newEnv(t, testConfig(), g)
	done := make(chan StepResult, 1)
	go func() {
		res, _ := e.Step(context.Background(), Action{Text: call("gate", `{}`)})
		done <- res
	}()
	<-g.started
	if s := e.State(); s != StateExecutingTools {
		t.Errorf("state during the step: %v", s)
	}
	_, err := e.Step(context.Background(), Action{Text: "<answer>x</answer>"})
	if err == nil || !strings.Contains(err.Error(), "another step is running") {
		t.Errorf("second step: err = %v", err)
	}
	close(g.open)
	if res := <-done; res.Responses[0] != "opened" {
		t.Errorf("first step: %+v", res)
	}
	if s, n := e.State(), len(e.History()); s != StateAwaitingAction || n != 1 {
		t.Errorf("after: state %v, %d turns", s, n)
	}
}

// ExecutingTools --ctx cancelled--> Done(cancelled) with an error.
func TestCancelledStep(t *testing.T) {
	w := waitTool{started: make(chan struct{}, 1)}
	e := newEnv(t, testConfig(), w)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	var res StepResult
	go func() {
		var err error
		res, err = e.Step(ctx, Action{Text: call("wait", `{}`)})
		errc <- err
	}()
	<-w.started
	cancel()
	err := <-errc
	if err == nil || !strings.Contains(err.Error(), "context canceled") || !res.Done || res.Stop != trajectory.StopCancelled {
		t.Errorf("got %+v, %v", res, err)
	}
	if e.State() != StateDone {
		t.Errorf("state %v", e.State())
	}
	if _, err := e.Step(context.Background(), Action{Text: "<answer>x</answer>"}); err == nil {
		t.Error("step after cancellation accepted")
	}
}

func TestObservationCapped(t *testing.T) {
	cfg := testConfig()
	cfg.MaxObservationChars = 64
	e := newEnv(t, cfg, &echoTool{})
	long := strings.Repeat("é", 100)
	res := step(t, e, call("echo", `{"text": "`+long+`"}`))
	// The marker for 100 dropped characters, "\n...[truncated 100 chars]",
	// is 1+3+11+3+7 = 25 characters, so 64-25 = 39 are kept and 61 dropped;
	// the final marker "\n...[truncated 61 chars]" is 24: 63 in all.
	want := strings.Repeat("é", 39) + "\n...[truncated 61 chars]"
	if res.Responses[0] != want {
		t.Errorf("response %q, want %q", res.Responses[0], want)
	}
	if res.Calls[0].Result != long {
		t.Error("the call record lost the full result")
	}
	short := step(t, e, call("echo", `{"text": "`+strings.Repeat("a", 64)+`"}`))
	if short.Responses[0] != strings.Repeat("a", 64) {
		t.Errorf("a response of exactly the limit was cut: %q", short.Responses[0])
	}
}

func TestEmptyToolOutput(t *testing.T) {
	e := newEnv(t, testConfig(), emptyTool{})
	res := step(t, e, call("empty", `{}`))
	if res.Responses[0] != "(no output)" {
		t.Errorf("response %q", res.Responses[0])
	}
}
