package gateway_test

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/gateway/gatewaytest"
	"github.com/agentrl/agentrl/gateway/openai"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
	"github.com/agentrl/agentrl/toolcall"
)

// `trainer serve` on a Gemma 4 policy: a turn with two calls after a
// thought that mentions <|tool_call> comes back as two tool_calls (finish
// "tool_calls", the thought as content, streamed without the calls); the
// calls sent back with their responses in the other order render the
// tokens the model generated followed by each response named after the
// call its tool_call_id gives, so the next prompt extends the first prompt
// and the completion by exactly that observation; the answer is content.
func TestGemma4ToolCalls(t *testing.T) {
	q := toolcall.Gemma4Quote
	lookupJSON := `{"type":"function","function":{"name":"lookup","description":"Look a title up.","parameters":{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}}}`
	tools := []json.RawMessage{json.RawMessage(gatewaytest.ToolJSON), json.RawMessage(lookupJSON)}
	thought := "<|channel>thought\nI write <|tool_call> twice.\n<channel|>"
	callText := thought + toolcall.Gemma4ToolCall("search", "query:"+q+"Kamo composer"+q) + toolcall.Gemma4ToolCall("lookup", "title:"+q+"Kamo"+q)
	lookupResponse := "Kamo is an opera."
	msgs := []tokenizer.Message{{Role: "system", Content: gatewaytest.System}, {Role: "user", Content: gatewaytest.Question},
		{Role: "assistant", Content: thought, ToolCalls: []tokenizer.ToolCall{{Name: "search", Arguments: json.RawMessage(`{"query":"Kamo composer"}`)},
			{Name: "lookup", Arguments: json.RawMessage(`{"title":"Kamo"}`)}}},
		{Role: "tool", Content: lookupResponse, Name: "lookup"}, {Role: "tool", Content: gatewaytest.Response, Name: "search"},
		{Role: "assistant", Content: gatewaytest.Answer}}
	text, err := tokenizertest.Gemma4Format(t).RenderText(msgs, tools, false)
	if err != nil {
		t.Fatal(err)
	}
	f := tokenizertest.Gemma4Format(t, text, "response:unknown{value:")
	tok := f.Tokenizer()
	gen := func(s, stop string) []int32 {
		ids := tok.Encode(s)
		if tok.Decode(ids, false) != s {
			t.Fatalf("the test tokenizer does not spell %q", s)
		}
		end, _ := f.Special(stop)
		return append(ids, end)
	}
	calls := gen(callText, toolcall.Gemma4ResponseOpen)
	dec := &scripted{completions: [][]int32{calls, calls, gen(gatewaytest.Answer, toolcall.Gemma4TurnEnd)}, left: make([][]int32, 1)}
	sched := gateway.NewScheduler(dec, f.StopIDs())
	stop := runScheduler(sched)
	defer stop()
	srv := httptest.NewServer(&gateway.Handler{Scheduler: sched, Format: f, Model: "tiny"})
	defer srv.Close()

	first := firstTurn(map[string]any{"tools": tools})
	c := postOK(t, srv.URL, first, "")
	ch := c.Choices[0]
	if ch.FinishReason != "tool_calls" || ch.Message.Content == nil || *ch.Message.Content != thought || len(ch.Message.ToolCalls) != 2 {
		t.Fatalf("choice %+v, want the thought and two tool calls", ch)
	}
	for i, want := range [][2]string{{"search", `{"query":"Kamo composer"}`}, {"lookup", `{"title":"Kamo"}`}} {
		if fn := ch.Message.ToolCalls[i]["function"].(map[string]any); fn["name"] != want[0] || fn["arguments"] != want[1] {
			t.Errorf("tool call %d: %v, want %s(%s)", i, fn, want[0], want[1])
		}
	}

	first["stream"] = true
	_, body := post(t, srv.URL, first, "")
	delete(first, "stream")
	chunks, done := sse(t, body)
	var content strings.Builder
	var streamed []any
	finish := ""
	for _, chunk := range chunks {
		chc := chunk["choices"].([]any)[0].(map[string]any)
		delta := chc["delta"].(map[string]any)
		if s, ok := delta["content"].(string); ok {
			content.WriteString(s)
		}
		if tc, ok := delta["tool_calls"].([]any); ok {
			streamed = tc
		}
		if fr, ok := chc["finish_reason"].(string); ok {
			finish = fr
		}
	}
	if !done || finish != "tool_calls" || len(streamed) != 2 || content.String() != thought {
		t.Fatalf("stream: done %v, finish %q, %d calls, content %q; want the thought and two calls", done, finish, len(streamed), content.String())
	}

	// The responses come back in the other order, each naming its call by
	// id.
	second := firstTurn(map[string]any{"tools": tools})
	sc := ch.Message.ToolCalls
	second["messages"] = append(second["messages"].([]map[string]any),
		map[string]any{"role": "assistant", "content": thought, "tool_calls": []any{sc[0], sc[1]}},
		map[string]any{"role": "tool", "tool_call_id": sc[1]["id"], "content": lookupResponse},
		map[string]any{"role": "tool", "tool_call_id": sc[0]["id"], "content": gatewaytest.Response})
	c = postOK(t, srv.URL, second, "")
	if ch := c.Choices[0]; ch.FinishReason != "stop" || ch.Message.Content == nil || *ch.Message.Content != gatewaytest.Answer || ch.Message.ToolCalls != nil {
		t.Fatalf("answer %+v, want %q", ch, gatewaytest.Answer)
	}
	obs := f.Observation([]tokenizer.ToolCall{{Name: "lookup"}, {Name: "search"}}, []string{lookupResponse, gatewaytest.Response}, true)
	if want := slices.Concat(dec.prompts[0], calls, obs); !slices.Equal(dec.prompts[2], want) {
		t.Errorf("the second prompt\n%q\nwant the first prompt, the completion and the observation\n%q", tok.Decode(dec.prompts[2], false), tok.Decode(want, false))
	}
	// A response whose tool_call_id names no call is named as the template
	// names it: after its own name, else "unknown".
	req := &openai.Request{Messages: []openai.Message{{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: "a", Function: openai.FunctionCall{Name: "search"}}}},
		{Role: "tool", ToolCallID: "b"}, {Role: "tool", ToolCallID: "b", Name: "lookup"}, {Role: "tool", ToolCallID: "a"}}}
	if got := gateway.ChatMessages(req, toolcall.Gemma4); got[1].Name != "unknown" || got[2].Name != "lookup" || got[3].Name != "search" {
		t.Errorf("tool messages named %q, %q, %q; want unknown, lookup, search", got[1].Name, got[2].Name, got[3].Name)
	}
}
