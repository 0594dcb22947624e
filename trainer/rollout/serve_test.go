package rollout_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/gateway/openai"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trainer/rollout"
)

// A Qwen3 thinking episode: turn 0 reasons and calls search, turn 1 has an
// empty think block and calls again. Qwen3's template keeps turn 0's
// reasoning (it follows the last user query) and drops turn 1's empty
// block once a message follows it, so the template context of turn 1
// extends turn 0's sequence and that of turn 2 does not: a split. `trainer
// serve`, sent the same conversation as OpenAI messages, renders every
// context token for token as the rollout does.
func TestTemplateContextIsServes(t *testing.T) {
	const sys, question = "Answer the question. Search for the facts you need.", "What does the founder of Dosa do?"
	turns := []rollout.ConvTurn{
		{Text: "<think>\nI should search for Dosa.\n</think>\n\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"Dosa\"}}\n</tool_call>",
			Responses: []string{"Dosa was founded by Bepo."}},
		{Text: "<think>\n\n</think>\n\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"Bepo\"}}\n</tool_call>",
			Responses: []string{"Bepo is a baker."}},
	}
	tpl := rollout.Context{Mode: rollout.ContextTemplate}
	// A word-level tokenizer over every text rendered, laid out as Qwen3.
	seed, err := tokenizer.BuildWordLevel([]string{sys}, tokenizer.QwenSpecials)
	if err != nil {
		t.Fatal(err)
	}
	f0, err := tokenizer.NewChatFormat(seed)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for k := 0; k <= len(turns); k++ {
		s, err := f0.RenderText(tpl.Messages(sys, question, turns[:k]), nil, true)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, s)
	}
	for _, tu := range turns {
		texts = append(texts, tu.Text)
	}
	tok, err := tokenizer.BuildWordLevel(texts, tokenizer.QwenSpecials)
	if err != nil {
		t.Fatal(err)
	}
	f, err := tokenizer.NewChatFormat(tok)
	if err != nil {
		t.Fatal(err)
	}
	chat := rollout.NewChat(f).WithContext(tpl)
	var ctx [][]int32
	for k := 0; k <= len(turns); k++ {
		msgs := tpl.Messages(sys, question, turns[:k])
		ids, err := chat.Render(msgs, nil)
		if err != nil {
			t.Fatal(err)
		}
		if served := serve(t, f, msgs); !slices.Equal(served, ids) {
			t.Fatalf("context %d: serve renders\n%q\nthe rollout\n%q", k, tok.Decode(served, false), tok.Decode(ids, false))
		}
		ctx = append(ctx, ids)
	}
	// The sequence after turn k: its context, the turn's tokens as
	// generated (stopped at </tool_call>).
	after := func(k int) []int32 { return append(slices.Clone(ctx[k]), tok.Encode(turns[k].Text)...) }
	if !slices.Equal(ctx[1][:len(after(0))], after(0)) {
		t.Errorf("turn 1's context does not extend turn 0's sequence:\n%q", tok.Decode(ctx[1], false))
	}
	if n := len(after(1)); len(ctx[2]) >= n && slices.Equal(ctx[2][:n], after(1)) {
		t.Errorf("turn 2's context extends turn 1's sequence; the template should drop turn 1's empty think block")
	}
	text := tok.Decode(ctx[2], false)
	if !strings.Contains(text, "I should search for Dosa.") || strings.Count(text, "<think>") != 1 {
		t.Errorf("turn 2's context keeps turn 0's reasoning and drops turn 1's empty block:\n%q", text)
	}
}

// serve is what the gateway renders for msgs sent as OpenAI messages.
func serve(t *testing.T, f *tokenizer.ChatFormat, msgs []tokenizer.Message) []int32 {
	t.Helper()
	var out []map[string]any
	calls := 0
	for _, m := range msgs {
		o := map[string]any{"role": m.Role, "content": m.Content}
		if m.Role == "tool" {
			o["tool_call_id"] = fmt.Sprintf("call_%d", calls)
		}
		var tc []map[string]any
		for _, c := range m.ToolCalls {
			var args string
			if err := json.Unmarshal(c.Arguments, &args); err != nil {
				t.Fatal(err)
			}
			calls++
			tc = append(tc, map[string]any{"id": fmt.Sprintf("call_%d", calls), "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": args}})
		}
		if tc != nil {
			o["tool_calls"] = tc
		}
		out = append(out, o)
	}
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": out})
	r, e := openai.ParseRequest(body, 1<<20)
	if e != nil {
		t.Fatalf("the gateway refuses the conversation: %v\n%s", e, body)
	}
	ids, _, err := f.Render(gateway.ChatMessages(r, f.CallSyntax()), r.Tools, true)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// env.context "" resolves to the template's default: template for Qwen3's
// layout, which rewrites history; an explicit mode stays as given.
func TestContextDefault(t *testing.T) {
	tok, err := tokenizer.BuildWordLevel([]string{"a b"}, tokenizer.QwenSpecials)
	if err != nil {
		t.Fatal(err)
	}
	f, err := tokenizer.NewChatFormat(tok)
	if err != nil {
		t.Fatal(err)
	}
	if m := rollout.NewChat(f).Context().Mode; m != rollout.ContextAppend {
		t.Errorf("NewChat's mode %q, want append", m)
	}
	if m := rollout.NewChat(f).WithContext(rollout.Context{}).Context().Mode; m != rollout.ContextTemplate {
		t.Errorf("the Qwen3 layout's default %q, want template", m)
	}
	if m := rollout.NewChat(f).WithContext(rollout.Context{Mode: rollout.ContextWindow, Turns: 3}).Context(); m.Mode != rollout.ContextWindow || m.Turns != 3 {
		t.Errorf("an explicit mode became %+v", m)
	}
}
