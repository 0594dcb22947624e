package envs

import (
	"strings"
	"testing"

	"github.com/agentrl/agentrl/toolcall"
	"github.com/agentrl/agentrl/trajectory"
)

// llamaConfig is testConfig with Llama 3's tool-call syntax.
func llamaConfig() EnvConfig {
	c := testConfig()
	c.Calls = toolcall.LlamaJSON
	return c
}

// A Llama 3 policy's call runs the tool, its answer ends the episode, and
// the episode earns the format reward; the same turns in a Hermes
// environment are no tool call.
func TestToolEnvStepsLlamaCalls(t *testing.T) {
	echo := &echoTool{}
	e := newEnv(t, llamaConfig(), echo)
	res := step(t, e, `{"name": "echo", "parameters": {"text": "Eiffel Tower is in Paris"}}<|eot_id|>`)
	if res.Done || len(res.Responses) != 1 || res.Responses[0] != "Eiffel Tower is in Paris" || echo.calls.Load() != 1 {
		t.Fatalf("call turn: %+v (tool called %d times)", res, echo.calls.Load())
	}
	if c := res.Calls[0]; c.Name != "echo" || c.Args != `{"text":"Eiffel Tower is in Paris"}` || !c.OK {
		t.Errorf("recorded call %+v", c)
	}
	res = step(t, e, "<answer>Paris</answer><|eot_id|>")
	if !res.Done || res.Stop != trajectory.StopAnswer || res.Answer != "Paris" {
		t.Fatalf("answer turn: %+v", res)
	}
	// em 1, format 1: total = 1*1 + 0.1*1.
	total, comp := e.Outcome()
	if comp["format"] != 1 || !near(total, 1.1) {
		t.Errorf("outcome %v, components %v; want format 1, total 1.1", total, comp)
	}

	h := newEnv(t, testConfig(), &echoTool{})
	if res := step(t, h, `{"name": "echo", "parameters": {"text": "x"}}<|eot_id|>`); !res.Done || res.Stop != trajectory.StopNoToolCall {
		t.Errorf("a Llama call in a Hermes environment: %+v, want no_tool_call", res)
	}
}

// A malformed Llama call gets the parser's error as its response and the
// episode goes on; the format reward then fails the episode.
func TestToolEnvLlamaParseError(t *testing.T) {
	echo := &echoTool{}
	e := newEnv(t, llamaConfig(), echo)
	res := step(t, e, `{"name": "echo", "arguments": {"text": "x"}}<|eot_id|>`)
	if res.Done || len(res.Responses) != 1 || !strings.Contains(res.Responses[0], `not "arguments"`) || echo.calls.Load() != 0 {
		t.Fatalf("malformed call: %+v", res)
	}
	if res.Calls[0].ParseError == "" {
		t.Errorf("the parse error is not recorded: %+v", res.Calls[0])
	}
	step(t, e, "<answer>Paris</answer><|eot_id|>")
	if _, comp := e.Outcome(); comp["format"] != 0 {
		t.Errorf("format %v after a malformed call, want 0", comp["format"])
	}
}

func TestEnvConfigRefusesUnknownCallSyntax(t *testing.T) {
	c := testConfig()
	c.Calls = toolcall.CallSyntax(4)
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "tool-call syntax CallSyntax(4)") {
		t.Errorf("Validate = %v", err)
	}
	c.Calls = toolcall.Gemma4
	if err := c.Validate(); err != nil {
		t.Errorf("Validate(gemma4) = %v", err)
	}
}

// xmlConfig is testConfig with Qwen3.5's tool-call syntax.
func xmlConfig() EnvConfig {
	c := testConfig()
	c.Calls = toolcall.QwenXML
	return c
}

// A Qwen3.5 policy's XML call runs the tool, its answer ends the episode,
// and the episode earns the format reward; a malformed call gets the
// parser's error as its response and fails the format reward.
func TestToolEnvStepsXMLCalls(t *testing.T) {
	echo := &echoTool{}
	e := newEnv(t, xmlConfig(), echo)
	turn := "I should echo it.\n</think>\n\n" + toolcall.XMLToolCall("echo", []toolcall.XMLParam{{Key: "text", Value: "Eiffel Tower is in Paris"}})
	res := step(t, e, turn)
	if res.Done || len(res.Responses) != 1 || res.Responses[0] != "Eiffel Tower is in Paris" || echo.calls.Load() != 1 {
		t.Fatalf("call turn: %+v (tool called %d times)", res, echo.calls.Load())
	}
	if c := res.Calls[0]; c.Name != "echo" || c.Args != `{"text":"Eiffel Tower is in Paris"}` || !c.OK {
		t.Errorf("recorded call %+v", c)
	}
	res = step(t, e, "Found.\n</think>\n\n<answer>Paris</answer><|im_end|>")
	if !res.Done || res.Stop != trajectory.StopAnswer || res.Answer != "Paris" {
		t.Fatalf("answer turn: %+v", res)
	}
	// em 1, format 1: total = 1*1 + 0.1*1.
	if total, comp := e.Outcome(); comp["format"] != 1 || !near(total, 1.1) {
		t.Errorf("outcome %v, components %v; want format 1, total 1.1", total, comp)
	}

	bad := newEnv(t, xmlConfig(), echo)
	res = step(t, bad, "<tool_call>\n{\"name\": \"echo\", \"arguments\": {\"text\": \"x\"}}\n</tool_call>")
	if res.Done || len(res.Responses) != 1 || !strings.Contains(res.Responses[0], "must start with <function=NAME>") || res.Calls[0].ParseError == "" {
		t.Fatalf("a Hermes call in a Qwen3.5 environment: %+v", res)
	}
	step(t, bad, "<answer>Paris</answer><|im_end|>")
	if _, comp := bad.Outcome(); comp["format"] != 0 {
		t.Errorf("format %v after a malformed call, want 0", comp["format"])
	}
}

// A Qwen3.5 turn whose reasoning mentions the call tags (the reasoning
// ends at </think>, which the chat template splits the turn's content
// after) still makes the call written after it, and an answer after such
// reasoning still ends the episode: the calls are read from the content
// only, and the episode earns the format reward.
func TestToolEnvXMLReasoningMentionsTheTags(t *testing.T) {
	echo := &echoTool{}
	e := newEnv(t, xmlConfig(), echo)
	turn := "I call a tool by writing <tool_call>, then <function=echo> and its <parameter=text>.\n</think>\n\n" +
		toolcall.XMLToolCall("echo", []toolcall.XMLParam{{Key: "text", Value: "Eiffel Tower is in Paris"}}) + "<|im_end|>"
	res := step(t, e, turn)
	if res.Done || len(res.Calls) != 1 || !res.Calls[0].OK || res.Calls[0].Name != "echo" || res.Calls[0].Args != `{"text":"Eiffel Tower is in Paris"}` ||
		echo.calls.Load() != 1 {
		t.Fatalf("call turn after reasoning that mentions <tool_call>: %+v (tool called %d times)", res, echo.calls.Load())
	}
	res = step(t, e, "No further <tool_call> is needed.\n</think>\n\n<answer>Paris</answer><|im_end|>")
	if !res.Done || res.Stop != trajectory.StopAnswer || res.Answer != "Paris" {
		t.Fatalf("answer turn after reasoning that mentions <tool_call>: %+v", res)
	}
	if total, comp := e.Outcome(); comp["format"] != 1 || !near(total, 1.1) {
		t.Errorf("outcome %v, components %v; want format 1, total 1.1", total, comp)
	}
}

// A Qwen3 (Hermes) turn whose think block mentions the call tags still
// makes the call written after it, and an answer after such a block still
// ends the episode: the calls are read after the last </think>, and the
// episode earns the format reward.
func TestToolEnvHermesReasoningMentionsTheTags(t *testing.T) {
	echo := &echoTool{}
	e := newEnv(t, testConfig(), echo)
	res := step(t, e, "<think>\nI call a tool by writing <tool_call>, its JSON and </tool_call>.\n</think>\n\n"+
		call("echo", `{"text": "Eiffel Tower is in Paris"}`)+"<|im_end|>")
	if res.Done || len(res.Calls) != 1 || !res.Calls[0].OK || res.Calls[0].Name != "echo" || res.Calls[0].Args != `{"text":"Eiffel Tower is in Paris"}` ||
		echo.calls.Load() != 1 {
		t.Fatalf("call turn after reasoning that mentions <tool_call>: %+v (tool called %d times)", res, echo.calls.Load())
	}
	res = step(t, e, "<think>\nNo further <tool_call> is needed.\n</think>\n\n<answer>Paris</answer><|im_end|>")
	if !res.Done || res.Stop != trajectory.StopAnswer || res.Answer != "Paris" {
		t.Fatalf("answer turn after reasoning that mentions <tool_call>: %+v", res)
	}
	if total, comp := e.Outcome(); comp["format"] != 1 || !near(total, 1.1) {
		t.Errorf("outcome %v, components %v; want format 1, total 1.1", total, comp)
	}
}
