package reward

import (
	"testing"

	"github.com/agentrl/agentrl/toolcall"
)

// Gemma 4's turns: a call is <|tool_call>...<tool_call|>, handed over with
// <|tool_response>; the reasoning is the thought channel, which may mention
// the call tags, and which the observation opens while thinking is on (the
// turn then only closes it); the answer turn ends with <turn|>.
func TestFormatGemma4(t *testing.T) {
	q := toolcall.Gemma4Quote
	callText := toolcall.Gemma4ToolCall("search", "query:"+q+"Kamo"+q) + toolcall.Gemma4ResponseOpen
	call := FormatTurn{Text: callText, CallsOK: true}
	answer := FormatTurn{Text: "<answer>Paris</answer><turn|>"}
	cases := []struct {
		name  string
		turns []FormatTurn
		want  float64
	}{
		{"answer only", []FormatTurn{answer}, 1},
		{"calls then answer", []FormatTurn{call, call, answer}, 1},
		{"thought then call", []FormatTurn{{Text: "<|channel>thought\nI will write <|tool_call> next<channel|>" + callText, CallsOK: true}, answer}, 1},
		{"thought the observation opened", []FormatTurn{call, {Text: "found it\n<channel|><answer>Paris</answer><turn|>"}}, 1},
		{"call did not parse", []FormatTurn{{Text: callText, CallsOK: false}, answer}, 0},
		{"last turn is a call", []FormatTurn{call}, 0},
		{"call after the answer", []FormatTurn{call, {Text: "<answer>Paris</answer>" + callText}}, 0},
		{"call in the final turn", []FormatTurn{call, {Text: "<tool_call|><answer>Paris</answer><turn|>"}}, 0},
		{"unclosed thought", []FormatTurn{call, {Text: "<|channel>thought\n<answer>Paris</answer><turn|>"}}, 0},
		{"answer inside the thought", []FormatTurn{call, {Text: "<|channel><answer>Paris</answer><channel|><turn|>"}}, 0},
		{"Hermes end of turn", []FormatTurn{call, {Text: "<answer>Paris</answer><|im_end|>"}}, 0},
	}
	for _, c := range cases {
		if got := Format(toolcall.Gemma4, c.turns); got != c.want {
			t.Errorf("%s: Format = %v, want %v", c.name, got, c.want)
		}
	}
	// The same episode read as Hermes fails: <turn|> ends no Hermes turn.
	if got := Format(toolcall.Hermes, []FormatTurn{call, answer}); got != 0 {
		t.Errorf("a Gemma 4 episode scored as Hermes: Format = %v, want 0", got)
	}
}
