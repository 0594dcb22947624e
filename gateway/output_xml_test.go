package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/gateway/openai"
	"github.com/agentrl/agentrl/toolcall"
)

// A finished Qwen3.5 completion with well-formed XML calls becomes those
// calls, each value typed by the request's schema, and the text before
// them (less the template's "\n\n") the content; a malformed call is
// content.
func TestMakeOutputQwenXML(t *testing.T) {
	schemas := toolcall.ParamSchemas{"search": json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"},"k":{"type":"integer"}}}`)}
	call := toolcall.XMLToolCall("search", []toolcall.XMLParam{{Key: "query", Value: "Kamo"}, {Key: "k", Value: "3"}})
	text := "I look it up.\n</think>\n\nSearching.\n\n" + call + "\n" + toolcall.XMLToolCall("now", nil)
	o := makeOutput(text, EndToken, true, toolcall.QwenXML, schemas)
	if o.finish != openai.FinishToolCalls || len(o.toolCalls) != 2 || o.content == nil || *o.content != "I look it up.\n</think>\n\nSearching." {
		t.Fatalf("%+v, want two calls and the text before them", o)
	}
	if f := o.toolCalls[0].Function; f.Name != "search" || f.Arguments != `{"query":"Kamo","k":3}` {
		t.Errorf("call 1 %+v, want search({\"query\":\"Kamo\",\"k\":3})", f)
	}
	if f := o.toolCalls[1].Function; f.Name != "now" || f.Arguments != `{}` {
		t.Errorf("call 2 %+v, want now({})", f)
	}
	// Reasoning that mentions <tool_call> stays whole in the content.
	reasoning := "I will write <tool_call> next.\n</think>\n\n"
	if o := makeOutput(reasoning+call, EndToken, true, toolcall.QwenXML, schemas); len(o.toolCalls) != 1 || o.content == nil || *o.content != strings.TrimSuffix(reasoning, "\n\n") {
		t.Errorf("reasoning that mentions the tag: %+v, want one call and the reasoning as content", o)
	}
	bad := "<tool_call>\n<function=search>\n</tool_call>"
	if o := makeOutput(bad, EndToken, true, toolcall.QwenXML, schemas); o.content == nil || *o.content != bad || o.toolCalls != nil {
		t.Errorf("malformed call: %+v, want it all as content", o)
	}
	// A call sent back goes to the template as the object it holds.
	if got := string(callArguments(`{"query":"Kamo","k":3}`, toolcall.QwenXML)); got != `{"query":"Kamo","k":3}` {
		t.Errorf("callArguments = %s, want the object", got)
	}
}
