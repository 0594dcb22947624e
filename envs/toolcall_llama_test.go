package envs

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/agent/protocol"
	"github.com/agentrl/agentrl/trajectory"
)

func TestParseLlamaToolCallsValid(t *testing.T) {
	search := []ToolCall{{"search", []byte(`{"query":"Eiffel Tower"}`)}}
	cases := []struct {
		name string
		text string
		want []ToolCall
	}{
		{"as the template renders it", `{"name": "search", "parameters": {"query": "Eiffel Tower"}}<|eot_id|>`, search},
		{"without the end of turn", `{"name": "search", "parameters": {"query": "Eiffel Tower"}}`, search},
		{"ended by eom", "{\"name\":\"search\",\"parameters\":{\"query\":\"Eiffel Tower\"}}\n<|eom_id|>", search},
		{"white space around", "\n  {\"name\": \"search\", \"parameters\": {\"query\": \"Eiffel Tower\"}} \n<|eot_id|>\n", search},
		// Meta's prompt format shows the models writing the tag first under
		// "Environment: ipython", and a "type" key.
		{"python tag", `<|python_tag|>{"type": "function", "name": "search", "parameters": {"query": "Eiffel Tower"}}<|eom_id|>`, search},
		{"absent parameters", `{"name": "now"}<|eot_id|>`, []ToolCall{{"now", []byte(`{}`)}}},
		{"null parameters", `{"name": "now", "parameters": null}`, []ToolCall{{"now", []byte(`{}`)}}},
		{"nested parameters compacted", "{\"name\": \"a\", \"parameters\": { \"list\" : [1, 2],\n \"o\": {\"p\": true} }}",
			[]ToolCall{{"a", []byte(`{"list":[1,2],"o":{"p":true}}`)}}},
		{"an answer", "<answer>Paris</answer><|eot_id|>", nil},
		{"text before a call", `I will search: {"name": "search", "parameters": {}}`, nil},
		{"a Hermes call", "<tool_call>\n{\"name\": \"search\", \"arguments\": {}}\n</tool_call>", nil},
		{"empty", "", nil},
		{"only the end of turn", "<|eot_id|>", nil},
	}
	for _, c := range cases {
		got, err := ParseLlamaToolCalls(c.text)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestParseLlamaToolCallsErrors(t *testing.T) {
	cases := []struct {
		name string
		text string
		kind ParseErrorKind
		msg  string // a fragment of the message, quoting the offending part
	}{
		{"cut off", `{"name": "search", "parameters": {"query": "Eif`, KindMalformedJSON, "not valid JSON (unexpected EOF): `{\"name\": \"search\""},
		{"single quotes", `{'name': 'search'}<|eot_id|>`, KindMalformedJSON, "not valid JSON"},
		{"missing name", `{"parameters": {"query": "x"}}`, KindMissingName, `has no "name": ` + "`{\"parameters\""},
		{"empty name", `{"name": " ", "parameters": {}}`, KindMissingName, "non-empty string, got `\" \"`"},
		{"number name", `{"name": 5}`, KindMissingName, "got `5`"},
		{"string parameters", `{"name": "search", "parameters": "{\"query\": \"x\"}"}`, KindBadArguments, `(search): "parameters" must be a JSON object, got ` + "`\"{"},
		{"array parameters", `{"name": "search", "parameters": [1]}`, KindBadArguments, "got `[1]`"},
		{"Hermes' arguments", `{"name": "search", "arguments": {"query": "x"}}`, KindBadArguments, `go in "parameters", not "arguments"`},
		{"trailing text", `{"name": "search", "parameters": {}} and then I answer`, KindTrailingText, "after tool call 1 (end the turn after its JSON object): `and then I answer`"},
		{"text after the end of turn", `{"name": "search"}<|eot_id|>more`, KindTrailingText, "`<|eot_id|>more`"},
		{"two ends of turn", `{"name": "search"}<|eot_id|><|eot_id|>`, KindTrailingText, "`<|eot_id|>`"},
		{"extra brace", `{"name": "search"}}`, KindTrailingText, "`}`"},
		{"two objects", "{\"name\": \"a\", \"parameters\": {}}\n{\"name\": \"b\", \"parameters\": {}}<|eot_id|>", KindTrailingText,
			"a second tool call after tool call 1: Llama 3's format makes one call per turn: `{\"name\": \"b\""},
	}
	for _, c := range cases {
		calls, err := ParseLlamaToolCalls(c.text)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: got calls %v, err %v; want a *ParseError", c.name, calls, err)
			continue
		}
		if pe.Kind != c.kind || pe.Call != 1 || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%s: got %s (call %d) %q; want %s (call 1) containing %q", c.name, pe.Kind, pe.Call, pe.Msg, c.kind, c.msg)
		}
		if calls != nil {
			t.Errorf("%s: calls returned with an error: %v", c.name, calls)
		}
	}
}

// ParseToolCallsIn reads each syntax with its parser, and neither reads
// the other's calls; a syntax it does not know is an error.
func TestParseToolCallsIn(t *testing.T) {
	hermes := call("search", `{"query": "x"}`)
	llama := protocol.LlamaToolCall("search", `{"query": "x"}`) + protocol.LlamaEOT
	want := []ToolCall{{"search", []byte(`{"query":"x"}`)}}
	for _, c := range []struct {
		syntax protocol.CallSyntax
		text   string
		want   []ToolCall
	}{
		{protocol.Hermes, hermes, want}, {protocol.LlamaJSON, llama, want},
		{protocol.Hermes, llama, nil}, {protocol.LlamaJSON, hermes, nil},
	} {
		got, err := ParseToolCallsIn(c.syntax, c.text, nil)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseToolCallsIn(%v, %q) = %+v, %v; want %+v", c.syntax, c.text, got, err, c.want)
		}
	}
	if _, err := ParseToolCallsIn(protocol.CallSyntax(7), llama, nil); err == nil || !strings.Contains(err.Error(), "CallSyntax(7)") {
		t.Errorf("unknown syntax: err = %v", err)
	}
}

// llamaConfig is testConfig with Llama 3's tool-call syntax.
func llamaConfig() EnvConfig {
	c := testConfig()
	c.Calls = protocol.LlamaJSON
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
	c.Calls = protocol.CallSyntax(3)
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "tool-call syntax CallSyntax(3)") {
		t.Errorf("Validate = %v", err)
	}
}
