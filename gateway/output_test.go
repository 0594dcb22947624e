package gateway

import (
	"testing"

	"github.com/agentrl/agentrl/gateway/openai"
	"github.com/agentrl/agentrl/toolcall"
)

// A finished Llama 3 completion that is one well-formed call becomes that
// tool call, its arguments as written; anything else is content.
func TestMakeOutputLlama(t *testing.T) {
	call := `{"name": "search", "parameters": {"query":  "Kamo"}}`
	cases := []struct {
		text, name, args string // name "" = content
	}{
		{call, "search", `{"query":  "Kamo"}`},
		{"\n" + call + " ", "search", `{"query":  "Kamo"}`},
		{toolcall.LlamaPythonTag + call, "search", `{"query":  "Kamo"}`},
		{`{"name": "now"}`, "now", "{}"},
		{`{"name": "now", "parameters": null}`, "now", "{}"},
		{`{"name": "search", "arguments": {"query": "Kamo"}}`, "", ""},
		{call + call, "", ""},
		{`{"name": "search", "parameters": {"query": "Ka`, "", ""},
		{"<answer>Sava</answer>", "", ""},
		{"<tool_call>\n{\"name\": \"search\", \"arguments\": {}}\n</tool_call>", "", ""},
	}
	for _, c := range cases {
		o := makeOutput(c.text, EndToken, true, toolcall.LlamaJSON, nil)
		if c.name == "" {
			if o.content == nil || *o.content != c.text || o.toolCalls != nil || o.finish != openai.FinishStop {
				t.Errorf("%q: %+v, want it all as content", c.text, o)
			}
			continue
		}
		if o.content != nil || len(o.toolCalls) != 1 || o.finish != openai.FinishToolCalls {
			t.Errorf("%q: %+v, want one tool call", c.text, o)
			continue
		}
		if f := o.toolCalls[0].Function; f.Name != c.name || f.Arguments != c.args {
			t.Errorf("%q: call %+v, want %s(%s)", c.text, f, c.name, c.args)
		}
	}
	if o := makeOutput(call, EndToken, false, toolcall.LlamaJSON, nil); o.content == nil || *o.content != call {
		t.Errorf("tools off: %+v, want content", o)
	}
}

// Streaming holds back all of a Llama 3 turn while it is or may become a
// call, and streams any other text as Hermes streams text without tags.
func TestStreamableLlama(t *testing.T) {
	stops := []string{"STOP"}
	cases := []struct {
		text string
		want int
	}{
		{"", 0},
		{"\n ", 0},
		{"{", 0},
		{` {"name": "search", "param`, 0},
		{"<|python", 0},
		{toolcall.LlamaPythonTag + "\n", 0},
		{toolcall.LlamaPythonTag + `{"na`, 0},
		{toolcall.LlamaPythonTag + "print(1)", len(toolcall.LlamaPythonTag + "print(1)")},
		{"The answer", len("The answer")},
		{"Paris ST", len("Paris ")},
		{"See {x}", len("See {x}")},
		{"<tool_call>\n", len("<tool_call>\n")}, // not Llama's markup
	}
	for _, c := range cases {
		if got := streamable(c.text, stops, true, toolcall.LlamaJSON); got != c.want {
			t.Errorf("streamable(%q) = %d, want %d", c.text, got, c.want)
		}
	}
	if got := streamable("{", nil, false, toolcall.LlamaJSON); got != 1 {
		t.Errorf("tools off: streamable(\"{\") = %d, want 1", got)
	}
}

// A client's call sent back renders as Llama 3's model wrote it: an object
// argument string goes to the template as the object; anything else, and
// every Hermes call, as the string.
func TestCallArguments(t *testing.T) {
	cases := []struct {
		args   string
		syntax toolcall.CallSyntax
		want   string
	}{
		{`{"query": "Kamo"}`, toolcall.LlamaJSON, `{"query": "Kamo"}`},
		{`not json`, toolcall.LlamaJSON, `"not json"`},
		{`[1]`, toolcall.LlamaJSON, `"[1]"`},
		{`null`, toolcall.LlamaJSON, `"null"`},
		{`{"query": "Kamo"}`, toolcall.Hermes, `"{\"query\": \"Kamo\"}"`},
	}
	for _, c := range cases {
		if got := string(callArguments(c.args, c.syntax)); got != c.want {
			t.Errorf("callArguments(%q, %v) = %s, want %s", c.args, c.syntax, got, c.want)
		}
	}
}

// A finished Qwen3 completion whose think block mentions <tool_call>
// becomes the call written after it, the reasoning and the text before the
// call the content; a mention in the reasoning alone is content.
func TestMakeOutputHermesReasoningMentionsTheTag(t *testing.T) {
	reasoning := "<think>\nI will write <tool_call> next.\n</think>\n\n"
	o := makeOutput(reasoning+"Searching.\n"+toolcall.ToolCall("search", `{"query":  "Kamo"}`), EndToken, true, toolcall.Hermes, nil)
	if o.finish != openai.FinishToolCalls || len(o.toolCalls) != 1 || o.content == nil || *o.content != reasoning+"Searching." {
		t.Fatalf("%+v, want one call and the text before it", o)
	}
	if f := o.toolCalls[0].Function; f.Name != "search" || f.Arguments != `{"query":  "Kamo"}` {
		t.Errorf("call %+v, want search as written", f)
	}
	text := reasoning + "<answer>Paris</answer>"
	if o := makeOutput(text, EndToken, true, toolcall.Hermes, nil); o.content == nil || *o.content != text || o.toolCalls != nil || o.finish != openai.FinishStop {
		t.Errorf("a mention in the reasoning alone: %+v, want it all as content", o)
	}
}
