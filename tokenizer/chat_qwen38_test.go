package tokenizer

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/toolcall"
)

// qwen38Chat is the shared Qwen tokenizer with Qwen3.8's template.
func qwen38Chat(t *testing.T) *ChatFormat {
	t.Helper()
	f, err := NewChatFormat(withTemplate(t, qwen(t), readTestTemplate(t, "qwen3.8.jinja")))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The reasoning instructions as Qwen3.8's template spells them.
const (
	xhighInstruction = "Reasoning effort is set to xhigh. Please think carefully through the task, validate key assumptions, " +
		"consider plausible alternatives, and prioritize correctness, consistency, and clarity in the final answer."
	lowInstruction = "Reasoning effort is set to low. Keep your thinking brief and focused, moving directly to the conclusion " +
		"without unnecessary elaboration."
)

// Qwen3.8's template is recognised, writes XML calls, keeps an episode's
// history, and takes enable_thinking, reasoning_effort (xhigh, medium,
// low) and preserve_thinking; any other effort, and Llama's date, are
// refused by name. The other families refuse Qwen3.8's options by name.
func TestQwen38Family(t *testing.T) {
	f := qwen38Chat(t)
	if f.Family() != Qwen38 || f.CallSyntax() != toolcall.QwenXML || f.RewritesHistory() {
		t.Errorf("family %s, calls %v, rewrites history %v; want qwen3.8, qwen3.5-xml, false", f.Family(), f.CallSyntax(), f.RewritesHistory())
	}
	for _, opts := range []ChatOptions{{NoThinking: true}, {ReasoningEffort: "low"}, {ReasoningEffort: "medium", DropThinking: true},
		{ReasoningEffort: "xhigh", NoThinking: true}} {
		if _, err := f.WithOptions(opts); err != nil {
			t.Errorf("%+v: %v", opts, err)
		}
	}
	for _, c := range []struct {
		opts ChatOptions
		name string
	}{
		{ChatOptions{ReasoningEffort: "high"}, `"high"`},
		{ChatOptions{ReasoningEffort: "XHIGH"}, `"XHIGH"`},
		{ChatOptions{Date: "01 Jan 2025"}, "Date"},
	} {
		if _, err := f.WithOptions(c.opts); err == nil || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%+v: %v, want a refusal naming %s", c.opts, err, c.name)
		}
	}
	l31, err := NewChatFormat(llamaWordLevel(t, readTestTemplate(t, "llama3.1-instruct.jinja")))
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range []*ChatFormat{qwenChat(t), qwen35Chat(t), l31} {
		if _, err := other.WithOptions(ChatOptions{ReasoningEffort: "low"}); err == nil || !strings.Contains(err.Error(), "ReasoningEffort") {
			t.Errorf("%s with ReasoningEffort: %v, want a refusal naming it", other.Family(), err)
		}
		if _, err := other.WithOptions(ChatOptions{DropThinking: true}); err == nil || !strings.Contains(err.Error(), "DropThinking") {
			t.Errorf("%s with DropThinking: %v, want a refusal naming it", other.Family(), err)
		}
	}
}

// Qwen3.8's layout, written out by hand from the template: the default
// effort's (xhigh) instruction first in the system turn, before the tools
// block; every assistant turn with its think block (an empty one when it
// has no reasoning), the earlier question's included; the reasoning read
// off the content at "</think>" and trimmed, the content trimmed; a call's
// boolean and null through tojson; arguments that are "" write no
// parameter; and the generation prompt's "<think>\n", which is not
// generated.
func TestQwen38LayoutByHand(t *testing.T) {
	f := qwen38Chat(t)
	msgs := []Message{
		{Role: "system", Content: "  Be brief.\n"},
		{Role: "user", Content: "first question "},
		{Role: "assistant", Content: "<think>\nold reasoning\n</think>\n\nold answer"},
		{Role: "user", Content: " q"},
		{Role: "assistant", Content: "  I search. </think>  Let me look.  ", ToolCalls: []ToolCall{
			{Name: "f", Arguments: json.RawMessage(`{"a": "x\ny", "n": 1e2, "b": true, "o": {"k": [1, "é"]}, "z": null}`)},
			{Name: "g", Arguments: json.RawMessage(`""`)}}},
		{Role: "tool", Content: " r1\n"},
		{Role: "assistant", Content: "<think>\nx\n</think>\n\nA"},
	}
	tools := []json.RawMessage{json.RawMessage(`{"name":"f","parameters":{}}`)}
	gen1 := "I search.\n</think>\n\nLet me look.\n\n<tool_call>\n<function=f>\n" +
		"<parameter=a>\nx\ny\n</parameter>\n<parameter=n>\n100.0\n</parameter>\n<parameter=b>\ntrue\n</parameter>\n" +
		"<parameter=o>\n{\"k\": [1, \"é\"]}\n</parameter>\n<parameter=z>\nnull\n</parameter>\n</function>\n</tool_call>\n" +
		"<tool_call>\n<function=g>\n</function>\n</tool_call><|im_end|>"
	gen0 := "old reasoning\n</think>\n\nold answer<|im_end|>"
	gen2 := "x\n</think>\n\nA<|im_end|>"
	toolsBlock := qwen35ToolsHeader + "\n{\"name\": \"f\", \"parameters\": {}}" + qwen35ToolsFooter
	rest := "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n" + gen1 + "\n" +
		"<|im_start|>user\n<tool_response>\nr1\n</tool_response><|im_end|>\n" +
		"<|im_start|>assistant\n<think>\n" + gen2 + "\n"
	want := "<|im_start|>system\n" + xhighInstruction + "\n\n" + toolsBlock + "\n\nBe brief.<|im_end|>\n" +
		"<|im_start|>user\nfirst question<|im_end|>\n<|im_start|>assistant\n<think>\n" + gen0 + "\n" + rest
	got, err := f.RenderText(msgs, tools, false)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("RenderText:\n got %q\nwant %q", got, want)
	}
	if runs := genRuns(t, f, msgs, tools, false); !slices.Equal(runs, []string{gen0, gen1, gen2}) {
		t.Errorf("generated runs %q", runs)
	}

	// preserve_thinking=false drops the reasoning of the turn before the
	// last question; low's instruction heads the system message (no tools).
	low, err := f.WithOptions(ChatOptions{ReasoningEffort: "low", DropThinking: true})
	if err != nil {
		t.Fatal(err)
	}
	want = "<|im_start|>system\n" + lowInstruction + "\n\nBe brief.<|im_end|>\n" +
		"<|im_start|>user\nfirst question<|im_end|>\n<|im_start|>assistant\nold answer<|im_end|>\n" + rest
	if got, err = low.RenderText(msgs, nil, false); err != nil || got != want {
		t.Fatalf("low, preserve_thinking=false: %v\n got %q\nwant %q", err, got, want)
	}
	if runs := genRuns(t, low, msgs, nil, false); !slices.Equal(runs, []string{"old answer<|im_end|>", gen1, gen2}) {
		t.Errorf("generated runs %q", runs)
	}

	// The system turn: medium writes no instruction, so an empty system
	// message gives none; the instruction alone makes one.
	q := []Message{{Role: "system", Content: " \n"}, {Role: "user", Content: "q"}}
	for _, c := range []struct {
		opts ChatOptions
		msgs []Message
		want string
	}{
		{ChatOptions{ReasoningEffort: "medium"}, q, "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n"},
		{ChatOptions{ReasoningEffort: "low"}, q, "<|im_start|>system\n" + lowInstruction + "<|im_end|>\n<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n"},
		{ChatOptions{}, q[1:], "<|im_start|>system\n" + xhighInstruction + "<|im_end|>\n<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n"},
		// Thinking off: no instruction, whatever the effort, and the empty
		// think block in the generation prompt.
		{ChatOptions{NoThinking: true, ReasoningEffort: "low"}, q, "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
	} {
		g, err := f.WithOptions(c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := g.RenderText(c.msgs, nil, true); err != nil || got != c.want {
			t.Errorf("%+v: %v\n got %q\nwant %q", c.opts, err, got, c.want)
		}
	}

	if _, err := f.RenderText([]Message{{Role: "user", Content: "q"}, {Role: "assistant", ToolCalls: []ToolCall{{Name: "f", Arguments: json.RawMessage(`"{}"`)}}}}, nil, false); err == nil ||
		!strings.Contains(err.Error(), "must be a JSON object") {
		t.Errorf("string arguments: %v", err)
	}
	if _, err := f.RenderText([]Message{{Role: "system", Content: "s"}}, nil, true); err == nil || !strings.Contains(err.Error(), "no user query") {
		t.Errorf("no user message: %v", err)
	}
}

// With thinking off, an earlier turn without reasoning keeps the empty
// think block its generation prompt wrote (mask 0); an episode built turn
// by turn from Prompt, the generated turns and Observation is the whole
// rendering.
func TestQwen38NoThinkingEpisode(t *testing.T) {
	f, err := qwen38Chat(t).WithOptions(ChatOptions{NoThinking: true})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "user", Content: "Where is Tarn?"},
		{Role: "assistant", ToolCalls: []ToolCall{{Name: "search", Arguments: json.RawMessage(`{"query": "Tarn"}`)}}},
		{Role: "tool", Content: "Tarn is in Oc."}, {Role: "assistant", Content: "<answer>Oc</answer>"}}
	call := "<tool_call>\n<function=search>\n<parameter=query>\nTarn\n</parameter>\n</function>\n</tool_call><|im_end|>"
	answer := "<answer>Oc</answer><|im_end|>"
	if runs := genRuns(t, f, msgs, nil, false); !slices.Equal(runs, []string{call, answer}) {
		t.Errorf("generated runs %q", runs)
	}
	tok := f.Tokenizer()
	ids, err := f.Prompt("", "Where is Tarn?", nil)
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, tok.Encode(strings.TrimSuffix(call, "<|im_end|>"))...)
	ids = append(ids, f.Observation(nil, []string{"Tarn is in Oc."}, false)...)
	ids = append(ids, tok.Encode(answer)...)
	whole, _, err := f.Render(msgs, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.Decode(ids, false), tok.Decode(whole[:len(whole)-1], false); got != want {
		t.Errorf("turn by turn %q\nwhole      %q", got, want)
	}
}
