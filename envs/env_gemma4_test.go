package envs

import (
	"strings"
	"testing"

	"github.com/agentrl/agentrl/toolcall"
	"github.com/agentrl/agentrl/trajectory"
)

// gemma4Config is testConfig with Gemma 4's tool-call syntax.
func gemma4Config() EnvConfig {
	c := testConfig()
	c.Calls = toolcall.Gemma4
	return c
}

// A Gemma 4 policy's calls (two in one turn, handed over with
// <|tool_response>) run the tool in order, each recorded with its name,
// which the observation names the response after; a thought channel that
// mentions the call tags is reasoning; the answer ends the episode, which
// earns the format reward. A Hermes block is a parse error whose response
// answers no call, and fails the format reward.
func TestToolEnvStepsGemma4Calls(t *testing.T) {
	q := toolcall.Gemma4Quote
	echo := &echoTool{}
	e := newEnv(t, gemma4Config(), echo)
	turn := "<|channel>thought\nI write <|tool_call> twice.\n<channel|>" + toolcall.Gemma4ToolCall("echo", "text:"+q+"Eiffel Tower"+q) +
		toolcall.Gemma4ToolCall("echo", "text:"+q+"is in Paris"+q) + toolcall.Gemma4ResponseOpen
	res := step(t, e, turn)
	if res.Done || len(res.Responses) != 2 || res.Responses[0] != "Eiffel Tower" || res.Responses[1] != "is in Paris" || echo.calls.Load() != 2 {
		t.Fatalf("call turn: %+v (tool called %d times)", res, echo.calls.Load())
	}
	if c := res.Calls[1]; c.Name != "echo" || c.Args != `{"text":"is in Paris"}` || !c.OK || c.ParseError != "" {
		t.Errorf("recorded call %+v", c)
	}
	res = step(t, e, "<answer>Paris</answer><turn|>")
	if !res.Done || res.Stop != trajectory.StopAnswer || res.Answer != "Paris" {
		t.Fatalf("answer turn: %+v", res)
	}
	// em 1, format 1: total = 1*1 + 0.1*1.
	if total, comp := e.Outcome(); comp["format"] != 1 || !near(total, 1.1) {
		t.Errorf("outcome %v, components %v; want format 1, total 1.1", total, comp)
	}

	bad := newEnv(t, gemma4Config(), echo)
	res = step(t, bad, "<|tool_call>\n{\"name\": \"echo\", \"arguments\": {\"text\": \"x\"}}\n<tool_call|><|tool_response>")
	if res.Done || len(res.Responses) != 1 || !strings.Contains(res.Responses[0], "call:NAME{ARGUMENTS}") || res.Calls[0].ParseError == "" {
		t.Fatalf("a JSON call in a Gemma 4 environment: %+v", res)
	}
	step(t, bad, "<answer>Paris</answer><turn|>")
	if _, comp := bad.Outcome(); comp["format"] != 0 {
		t.Errorf("format %v after a malformed call, want 0", comp["format"])
	}
}
