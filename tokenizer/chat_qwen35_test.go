package tokenizer

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/toolcall"
)

// qwen35Chat is the shared Qwen tokenizer with Qwen3.5's template.
func qwen35Chat(t *testing.T) *ChatFormat {
	t.Helper()
	f, err := NewChatFormat(withTemplate(t, qwen(t), qwen35ChatTemplate))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Qwen3.5's template is recognised, writes XML calls, keeps an episode's
// history and takes enable_thinking but not Llama's date.
func TestQwen35Family(t *testing.T) {
	f := qwen35Chat(t)
	if f.Family() != Qwen35 || f.CallSyntax() != toolcall.QwenXML || f.RewritesHistory() {
		t.Errorf("family %s, calls %v, rewrites history %v; want qwen3.5, qwen3.5-xml, false", f.Family(), f.CallSyntax(), f.RewritesHistory())
	}
	if _, err := f.WithOptions(ChatOptions{NoThinking: true}); err != nil {
		t.Error(err)
	}
	if _, err := f.WithOptions(ChatOptions{Date: "01 Jan 2025"}); err == nil || !strings.Contains(err.Error(), "Date") {
		t.Errorf("Date: %v, want a refusal naming it", err)
	}
}

// Qwen3.5's layout, written out by hand from the template: the tools block
// first and the trimmed system message after it, trimmed contents, the
// reasoning of a turn before the last user query dropped and that of every
// later one in a think block (empty when there is none), the calls in XML
// after "\n\n" (a value as text, a number and a boolean as Python prints
// them, an object through tojson), tool responses trimmed in one user turn,
// and the generation prompt's "<think>\n", which is not generated.
func TestQwen35LayoutByHand(t *testing.T) {
	f := qwen35Chat(t)
	msgs := []Message{
		{Role: "system", Content: "  Be brief.\n"},
		{Role: "user", Content: "first question "},
		{Role: "assistant", Content: "<think>\nold reasoning\n</think>\n\nold answer"},
		{Role: "user", Content: " q"},
		{Role: "assistant", Content: "<think>\nI search.\n</think>\n\nLet me look.  ", ToolCalls: []ToolCall{
			{Name: "f", Arguments: json.RawMessage(`{"a": "x\ny", "n": 1e2, "b": true, "o": {"k": [1, "é"]}, "z": null}`)},
			{Name: "g", Arguments: json.RawMessage(`{}`)}}},
		{Role: "tool", Content: " r1\n"}, {Role: "tool", Content: "r2"},
		{Role: "assistant", ToolCalls: []ToolCall{{Name: "f", Arguments: json.RawMessage(`{"a": "1"}`)}}},
		{Role: "tool", Content: "r3"},
		{Role: "assistant", Content: "<think>\nx\n</think>\n\nA"},
	}
	tools := []json.RawMessage{json.RawMessage(`{"name":"f","parameters":{}}`)}
	gen1 := "I search.\n</think>\n\nLet me look.\n\n<tool_call>\n<function=f>\n" +
		"<parameter=a>\nx\ny\n</parameter>\n<parameter=n>\n100.0\n</parameter>\n<parameter=b>\nTrue\n</parameter>\n" +
		"<parameter=o>\n{\"k\": [1, \"é\"]}\n</parameter>\n<parameter=z>\nNone\n</parameter>\n</function>\n</tool_call>\n" +
		"<tool_call>\n<function=g>\n</function>\n</tool_call><|im_end|>"
	gen2 := "\n</think>\n\n<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call><|im_end|>"
	gen3 := "x\n</think>\n\nA<|im_end|>"
	want := "<|im_start|>system\n" + qwen35ToolsHeader + "\n{\"name\": \"f\", \"parameters\": {}}" + qwen35ToolsFooter + "\n\nBe brief.<|im_end|>\n" +
		"<|im_start|>user\nfirst question<|im_end|>\n<|im_start|>assistant\nold answer<|im_end|>\n" +
		"<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n" + gen1 + "\n" +
		"<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n</tool_response><|im_end|>\n" +
		"<|im_start|>assistant\n<think>\n" + gen2 + "\n" +
		"<|im_start|>user\n<tool_response>\nr3\n</tool_response><|im_end|>\n" +
		"<|im_start|>assistant\n<think>\n" + gen3 + "\n"
	got, err := f.RenderText(msgs, tools, false)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("RenderText:\n got %q\nwant %q", got, want)
	}
	// gen2's "\n" merges with the "\n" of the prompt's "<think>\n" into one
	// token, which counts as generated.
	if runs := genRuns(t, f, msgs, tools, false); !slices.Equal(runs, []string{"old answer<|im_end|>", gen1, "\n" + gen2, gen3}) {
		t.Errorf("generated runs %q", runs)
	}
	if _, err := f.RenderText([]Message{{Role: "system", Content: "s"}}, nil, true); err == nil || !strings.Contains(err.Error(), "no user query") {
		t.Errorf("no user message: %v", err)
	}
	if _, err := f.RenderText([]Message{{Role: "user", Content: "q"}, {Role: "assistant", ToolCalls: []ToolCall{{Name: "f", Arguments: json.RawMessage(`"{}"`)}}}}, nil, false); err == nil ||
		!strings.Contains(err.Error(), "must be a JSON object") {
		t.Errorf("string arguments: %v", err)
	}
}

// The prompt opens the think block (or, with enable_thinking=false, writes
// it empty); an observation trims the responses as the template does.
func TestQwen35PromptAndObservation(t *testing.T) {
	f := qwen35Chat(t)
	dec := func(ids []int32) string { return f.Tokenizer().Decode(ids, false) }
	prompt, err := f.Prompt("", "hi", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dec(prompt), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n"; got != want {
		t.Errorf("Prompt %q, want %q", got, want)
	}
	if got, want := dec(f.Observation(nil, []string{" r \n", "s"}, false)), "<|im_end|>\n<|im_start|>user\n<tool_response>\nr\n</tool_response>\n"+
		"<tool_response>\ns\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n"; got != want {
		t.Errorf("Observation %q, want %q", got, want)
	}
	off, err := f.WithOptions(ChatOptions{NoThinking: true})
	if err != nil {
		t.Fatal(err)
	}
	prompt, err = off.Prompt("", "hi", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := dec(prompt), "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"; got != want {
		t.Errorf("Prompt without thinking %q, want %q", got, want)
	}
}

// RenderEpisode lays a Qwen3.5 conversation out as an episode's tokens
// fall: the prompt, each generated turn encoded on its own, the
// observation between them. Render encodes each turn whole, so the
// generation prompt's "\n" and the empty think block's "\n" become one
// token there, which no rollout samples after the prompt; the texts are
// the same. On Qwen's own tokenizer and on a word-level one.
func TestQwen35RenderEpisode(t *testing.T) {
	msgs := []Message{{Role: "system", Content: "Search."}, {Role: "user", Content: "Where is Tarn?"},
		{Role: "assistant", ToolCalls: []ToolCall{{Name: "search", Arguments: json.RawMessage(`{"query": "Tarn"}`)}}},
		{Role: "tool", Content: "Tarn is in Oc."}, {Role: "assistant", Content: "<answer>Oc</answer>"}}
	call := "\n</think>\n\n<tool_call>\n<function=search>\n<parameter=query>\nTarn\n</parameter>\n</function>\n</tool_call>"
	answer := "\n</think>\n\n<answer>Oc</answer><|im_end|>"
	word, err := BuildWordLevelAs(Qwen35, []string{"Search. Where is Tarn? Tarn is in Oc. search query " + call + answer +
		"<|im_start|>system\nuser\nassistant\n<think>\n<tool_response>\n</tool_response>"}, QwenSpecials)
	if err != nil {
		t.Fatal(err)
	}
	wf, err := NewChatFormat(word)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []*ChatFormat{qwen35Chat(t), wf} {
		tok := f.Tokenizer()
		prompt, err := f.Prompt("Search.", "Where is Tarn?", nil)
		if err != nil {
			t.Fatal(err)
		}
		want := append(append([]int32{}, prompt...), tok.Encode(call)...)
		wantMask := append(make([]uint8, len(prompt)), ones(len(want)-len(prompt))...)
		obs := f.Observation(nil, []string{"Tarn is in Oc."}, false)
		want = append(want, obs...)
		wantMask = append(wantMask, make([]uint8, len(obs))...)
		n := len(want)
		want = append(want, tok.Encode(answer)...)
		wantMask = append(wantMask, ones(len(want)-n)...)
		ids, mask, err := f.RenderEpisode(msgs, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The episode ends at the model's <|im_end|>; the rendering has the
		// template's "\n" after it. The first call's <|im_end|> is the
		// model's in the rendering, the observation's in the episode.
		if len(ids) != len(want)+1 || !slices.Equal(ids[:len(want)], want) {
			t.Fatalf("%s: RenderEpisode\n%v\nwant the episode's\n%v", f.Family(), ids, want)
		}
		end, _ := f.Special(toolcall.TurnEnd)
		for i, m := range wantMask {
			if ids[i] == end && i < n {
				continue
			}
			if mask[i] != m {
				t.Errorf("%s: token %d (%q) has mask %d, want %d", f.Family(), i, tok.Decode(ids[i:i+1], false), mask[i], m)
			}
		}
		whole, _, err := f.Render(msgs, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Equal(whole, ids) || tok.Decode(whole, false) != tok.Decode(ids, false) {
			t.Errorf("%s: Render and RenderEpisode should differ in tokens only, not in text", f.Family())
		}
	}
}

func ones(n int) []uint8 {
	m := make([]uint8, n)
	for i := range m {
		m[i] = 1
	}
	return m
}
