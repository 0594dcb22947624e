package reward

import (
	"testing"

	"github.com/agentrl/agentrl/toolcall"
)

// Qwen3.5's turns: a call is an XML block in <tool_call> tags after the
// reasoning, the turn ends with <|im_end|>; the answer is as Hermes'.
func TestFormatQwenXML(t *testing.T) {
	call := FormatTurn{Text: "I search.\n</think>\n\n" + toolcall.XMLToolCall("search", []toolcall.XMLParam{{Key: "query", Value: "Kamo"}}), CallsOK: true}
	answer := FormatTurn{Text: "Found.\n</think>\n\n<answer>Paris</answer><|im_end|>"}
	cases := []struct {
		name  string
		turns []FormatTurn
		want  float64
	}{
		{"calls then answer", []FormatTurn{call, call, answer}, 1},
		{"call did not parse", []FormatTurn{{Text: call.Text, CallsOK: false}, answer}, 0},
		{"last turn is a call", []FormatTurn{call}, 0},
		{"think closed after the call", []FormatTurn{{Text: toolcall.XMLToolCall("search", nil) + "</think>", CallsOK: true}, answer}, 0},
		{"call in the answer turn", []FormatTurn{call, {Text: toolcall.XMLToolCall("search", nil) + "<answer>Paris</answer><|im_end|>"}}, 0},
		{"Llama end of turn", []FormatTurn{call, {Text: "<answer>Paris</answer><|eot_id|>"}}, 0},
	}
	for _, c := range cases {
		if got := Format(toolcall.QwenXML, c.turns); got != c.want {
			t.Errorf("%s: Format = %v, want %v", c.name, got, c.want)
		}
	}
}

// Only Qwen3.5's turns may close a think block they did not open.
func TestFormatUnopenedThink(t *testing.T) {
	answer := []FormatTurn{{Text: "Found.\n</think>\n\n<answer>Paris</answer><|im_end|>"}}
	if got := Format(toolcall.Hermes, answer); got != 0 {
		t.Errorf("Hermes: Format = %v, want 0 (</think> without <think>)", got)
	}
	if got := Format(toolcall.QwenXML, []FormatTurn{{Text: "a</think><think>b</think></think><answer>Paris</answer>"}}); got != 0 {
		t.Errorf("Qwen3.5, a second unopened </think>: Format = %v, want 0", got)
	}
}

// Qwen3.5's (and Qwen3's) reasoning may mention the call tags: the turns
// are judged by what follows it, a call after reasoning that mentions <tool_call> is a
// call turn, and an answer after it an answer turn.
func TestFormatQwenXMLReasoningMentionsTheTags(t *testing.T) {
	call := FormatTurn{Text: "A call is written <tool_call>...</tool_call>.\n</think>\n\n" +
		toolcall.XMLToolCall("search", []toolcall.XMLParam{{Key: "query", Value: "Kamo"}}), CallsOK: true}
	answer := FormatTurn{Text: "No <tool_call> is needed.\n</think>\n\n<answer>Paris</answer><|im_end|>"}
	if got := Format(toolcall.QwenXML, []FormatTurn{call, answer}); got != 1 {
		t.Errorf("Format = %v, want 1", got)
	}
	// Hermes (Qwen3) reads the turn after its last </think> too.
	hermesCall := FormatTurn{Text: "<think>A call is written <tool_call>...</tool_call>.</think>\n\n" +
		toolcall.ToolCall("search", `{"query": "Kamo"}`), CallsOK: true}
	if got := Format(toolcall.Hermes, []FormatTurn{hermesCall, {Text: "<think>No <tool_call> is needed.</think>\n\n<answer>Paris</answer><|im_end|>"}}); got != 1 {
		t.Errorf("Hermes: Format = %v, want 1", got)
	}
	// A think block never closed is content: the mention is a tag.
	if got := Format(toolcall.Hermes, []FormatTurn{{Text: "<think>No <tool_call> is needed.\n\n<answer>Paris</answer><|im_end|>"}}); got != 0 {
		t.Errorf("Hermes, think never closed: Format = %v, want 0", got)
	}
}
