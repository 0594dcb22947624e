package envs

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/agent/protocol"
	"github.com/agentrl/agentrl/trajectory"
)

// xmlSchemas declares one tool with a parameter of every type the parser
// reads, and a nullable one of each form.
var xmlSchemas = ParamSchemas{"calc": json.RawMessage(`{"type": "object", "properties": {
	"expr": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"}, "exact": {"type": "boolean"},
	"opts": {"type": "object"}, "list": {"type": "array"}, "maybe": {"type": ["null", "integer"]},
	"either": {"anyOf": [{"type": "null"}, {"type": "boolean"}]}}}`)}

func TestParseXMLToolCallsValid(t *testing.T) {
	call := func(name string, params ...string) string {
		var ps []protocol.XMLParam
		for i := 0; i < len(params); i += 2 {
			ps = append(ps, protocol.XMLParam{Key: params[i], Value: params[i+1]})
		}
		return protocol.XMLToolCall(name, ps)
	}
	cases := []struct {
		name    string
		text    string
		schemas ParamSchemas
		want    []ToolCall
	}{
		{"no call", "<think>\nI know.\n</think>\n\n<answer>Paris</answer>", nil, nil},
		{"template layout, untyped", "<think>\nsearch\n</think>\n\nLet me look.\n\n" + call("search", "query", "Eiffel Tower", "k", "3") + "<|im_end|>", nil,
			[]ToolCall{{"search", []byte(`{"query":"Eiffel Tower","k":"3"}`)}}},
		{"typed by the schema", call("calc", "expr", "12", "n", "3", "x", "1.5e3", "exact", "True", "opts", `{"a": [1, 2]}`, "list", "[]",
			"maybe", "None", "either", "false"), xmlSchemas,
			[]ToolCall{{"calc", []byte(`{"expr":"12","n":3,"x":1.5e3,"exact":true,"opts":{"a":[1,2]},"list":[],"maybe":null,"either":false}`)}}},
		{"text not of its type stays text", call("calc", "n", "3.0", "x", "inf", "exact", "yes", "opts", "[1]", "expr", "null"), xmlSchemas,
			[]ToolCall{{"calc", []byte(`{"n":"3.0","x":"inf","exact":"yes","opts":"[1]","expr":"null"}`)}}},
		{"unknown tool and parameter are text", call("calc", "other", "5") + "\n" + call("nope", "n", "5"), xmlSchemas,
			[]ToolCall{{"calc", []byte(`{"other":"5"}`)}, {"nope", []byte(`{"n":"5"}`)}}},
		{"multi-line value, markup kept", call("write", "text", "line one\n\n<b>two</b> & \"three\"\n"), nil,
			[]ToolCall{{"write", []byte(`{"text":"line one\n\n<b>two</b> & \"three\"\n"}`)}}},
		{"a value that spells the closing tag", call("write", "text", "a </parameter> b", "n", "1"), nil,
			[]ToolCall{{"write", []byte(`{"text":"a </parameter> b","n":"1"}`)}}},
		{"no parameters", call("now"), nil, []ToolCall{{"now", []byte(`{}`)}}},
		{"tight layout", "<tool_call><function=f><parameter=a>x</parameter></function></tool_call>", nil,
			[]ToolCall{{"f", []byte(`{"a":"x"}`)}}},
		{"empty value", "<tool_call>\n<function=f>\n<parameter=a>\n\n</parameter>\n</function>\n</tool_call>", nil,
			[]ToolCall{{"f", []byte(`{"a":""}`)}}},
	}
	for _, c := range cases {
		got, err := ParseXMLToolCalls(c.text, c.schemas)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %s, want %s", c.name, show(got), show(c.want))
		}
	}
}

// show prints calls as name(arguments).
func show(calls []ToolCall) string {
	var s []string
	for _, c := range calls {
		s = append(s, c.Name+"("+string(c.Arguments)+")")
	}
	return strings.Join(s, ", ")
}

func TestParseXMLToolCallsErrors(t *testing.T) {
	cases := []struct {
		name string
		text string
		kind ParseErrorKind
		call int
		msg  string
	}{
		{"JSON inside", "<tool_call>\n{\"name\": \"search\", \"arguments\": {}}\n</tool_call>", KindMalformedXML, 1, "must start with <function=NAME>"},
		{"empty block", "<tool_call>\n\n</tool_call>", KindMalformedXML, 1, "is empty"},
		{"no function close", "<tool_call>\n<function=f>\n<parameter=a>\nx\n</parameter>\n</tool_call>", KindMalformedXML, 1, "has no </function>"},
		{"no name end", "<tool_call><function=f\n</tool_call>", KindMalformedXML, 1, `no ">" after <function=`},
		{"empty name", "<tool_call><function=></function></tool_call>", KindMissingName, 1, `got ""`},
		{"spaced name", "<tool_call><function=my tool></function></tool_call>", KindMissingName, 1, `got "my tool"`},
		{"no parameter close", "<tool_call><function=f><parameter=a>x</function></tool_call>", KindMalformedXML, 1, `parameter "a" has no </parameter>`},
		{"text before a parameter", "<tool_call><function=f>oops<parameter=b>y</parameter></function></tool_call>", KindMalformedXML, 1, "expected <parameter=KEY> or </function>, got `oops"},
		{"twice", "<tool_call><function=f><parameter=a>x</parameter><parameter=a>y</parameter></function></tool_call>", KindBadArguments, 1, `parameter "a" is given twice`},
		{"empty key", "<tool_call><function=f><parameter=>x</parameter></function></tool_call>", KindBadArguments, 1, "a parameter name must be non-empty"},
		{"second call bad", protocol.XMLToolCall("f", nil) + "\n<tool_call><function=g></tool_call>", KindMalformedXML, 2, "tool call 2 (g) has no </function>"},
		{"unclosed", "<tool_call>\n<function=f>\n", KindUnclosedTag, 1, "no closing </tool_call>"},
		{"text after", protocol.XMLToolCall("f", nil) + " and more", KindTrailingText, 1, "unexpected text after tool call 1"},
	}
	for _, c := range cases {
		_, err := ParseXMLToolCalls(c.text, nil)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: got %v, want a *ParseError", c.name, err)
			continue
		}
		if pe.Kind != c.kind || pe.Call != c.call || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%s: got %s call %d %q, want %s call %d containing %q", c.name, pe.Kind, pe.Call, pe.Msg, c.kind, c.call, c.msg)
		}
	}
}

// ParseToolCallsIn reads the XML syntax with the schemas it is given.
func TestParseToolCallsInXML(t *testing.T) {
	text := protocol.XMLToolCall("calc", []protocol.XMLParam{{Key: "n", Value: "7"}})
	got, err := ParseToolCallsIn(protocol.QwenXML, text, xmlSchemas)
	if err != nil || len(got) != 1 || string(got[0].Arguments) != `{"n":7}` {
		t.Errorf("ParseToolCallsIn(QwenXML) = %s, %v; want calc({\"n\":7})", show(got), err)
	}
	if _, err := ParseToolCallsIn(protocol.Hermes, text, nil); err == nil {
		t.Error("the Hermes parser read an XML call")
	}
}

// xmlConfig is testConfig with Qwen3.5's tool-call syntax.
func xmlConfig() EnvConfig {
	c := testConfig()
	c.Calls = protocol.QwenXML
	return c
}

// A Qwen3.5 policy's XML call runs the tool, its answer ends the episode,
// and the episode earns the format reward; a malformed call gets the
// parser's error as its response and fails the format reward.
func TestToolEnvStepsXMLCalls(t *testing.T) {
	echo := &echoTool{}
	e := newEnv(t, xmlConfig(), echo)
	turn := "I should echo it.\n</think>\n\n" + protocol.XMLToolCall("echo", []protocol.XMLParam{{Key: "text", Value: "Eiffel Tower is in Paris"}})
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
		protocol.XMLToolCall("echo", []protocol.XMLParam{{Key: "text", Value: "Eiffel Tower is in Paris"}}) + "<|im_end|>"
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
