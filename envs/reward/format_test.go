package reward

import (
	"testing"

	"github.com/agentrl/agentrl/toolcall"
)

func TestFormat(t *testing.T) {
	call := FormatTurn{Text: "<think>look it up</think>\n<tool_call>\n{\"name\":\"search\"}\n</tool_call>", CallsOK: true}
	answer := FormatTurn{Text: "<think>found it</think>\n<answer>Paris</answer><|im_end|>\n"}
	cases := []struct {
		name  string
		turns []FormatTurn
		want  float64
	}{
		{"no turns", nil, 0},
		{"answer only", []FormatTurn{answer}, 1},
		{"answer without think", []FormatTurn{{Text: "<answer>Paris</answer>"}}, 1},
		{"calls then answer", []FormatTurn{call, call, answer}, 1},
		{"call turn without think", []FormatTurn{{Text: "<tool_call>{}</tool_call>", CallsOK: true}, answer}, 1},
		{"call did not parse", []FormatTurn{{Text: call.Text, CallsOK: false}, answer}, 0},
		{"last turn is a call", []FormatTurn{call}, 0},
		{"answer in a middle turn", []FormatTurn{{Text: call.Text + "<answer>x</answer>", CallsOK: true}, answer}, 0},
		{"two answers", []FormatTurn{{Text: "<answer>a</answer><answer>b</answer>"}}, 0},
		{"unclosed answer", []FormatTurn{{Text: "<answer>Paris"}}, 0},
		{"close before open", []FormatTurn{{Text: "</answer>Paris<answer>"}}, 0},
		{"text after answer", []FormatTurn{{Text: "<answer>Paris</answer> I hope"}}, 0},
		{"tool call in final turn", []FormatTurn{{Text: "<tool_call>{}</tool_call><answer>Paris</answer>"}}, 0},
		{"unclosed think", []FormatTurn{{Text: "<think>hmm <answer>Paris</answer>"}}, 0},
		{"nested think", []FormatTurn{{Text: "<think>a<think>b</think></think><answer>Paris</answer>"}}, 0},
		{"stray think close", []FormatTurn{{Text: "</think><answer>Paris</answer>"}}, 0},
		{"answer inside think", []FormatTurn{{Text: "<think><answer>Paris</answer></think>"}}, 0},
		{"think after call", []FormatTurn{{Text: "<tool_call>{}</tool_call><think>x</think>", CallsOK: true}, answer}, 0},
		{"two think blocks", []FormatTurn{{Text: "<think>a</think>b<think>c</think><answer>Paris</answer>"}}, 1},
	}
	for _, c := range cases {
		if got := Format(toolcall.Hermes, c.turns); got != c.want {
			t.Errorf("%s: Format = %v, want %v", c.name, got, c.want)
		}
	}
}

// Llama 3's turns: a call is the bare JSON object the template renders,
// the turn ends with <|eot_id|> (or <|eom_id|>); the answer is as Hermes'.
func TestFormatLlama(t *testing.T) {
	call := FormatTurn{Text: `{"name": "search", "parameters": {"query": "Kamo"}}<|eot_id|>`, CallsOK: true}
	answer := FormatTurn{Text: "<answer>Paris</answer><|eot_id|>"}
	cases := []struct {
		name  string
		turns []FormatTurn
		want  float64
	}{
		{"answer only", []FormatTurn{answer}, 1},
		{"calls then answer", []FormatTurn{call, call, answer}, 1},
		{"answer ended by eom", []FormatTurn{call, {Text: "<answer>Paris</answer><|eom_id|>"}}, 1},
		{"python tag call", []FormatTurn{{Text: `<|python_tag|>{"name": "search"}<|eom_id|>`, CallsOK: true}, answer}, 1},
		{"think then answer", []FormatTurn{call, {Text: "<think>found it</think>\n<answer>Paris</answer><|eot_id|>"}}, 1},
		{"call did not parse", []FormatTurn{{Text: call.Text, CallsOK: false}, answer}, 0},
		{"last turn is a call", []FormatTurn{call}, 0},
		{"answer in a call turn", []FormatTurn{{Text: `{"name": "search", "parameters": {"query": "<answer>x</answer>"}}`, CallsOK: true}, answer}, 0},
		{"final turn starts a call", []FormatTurn{call, {Text: `{"name": "search"} <answer>Paris</answer>`}}, 0},
		{"Hermes end of turn", []FormatTurn{call, {Text: "<answer>Paris</answer><|im_end|>"}}, 0},
		{"text after answer", []FormatTurn{call, {Text: "<answer>Paris</answer> I hope<|eot_id|>"}}, 0},
	}
	for _, c := range cases {
		if got := Format(toolcall.LlamaJSON, c.turns); got != c.want {
			t.Errorf("%s: Format = %v, want %v", c.name, got, c.want)
		}
	}
	// The same Llama episode read as Hermes fails: <|eot_id|> ends no Hermes turn.
	if got := Format(toolcall.Hermes, []FormatTurn{call, answer}); got != 0 {
		t.Errorf("a Llama episode scored as Hermes: Format = %v, want 0", got)
	}
}
