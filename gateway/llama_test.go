package gateway_test

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/gateway/gatewaytest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
	"github.com/agentrl/agentrl/toolcall"
)

// scripted is a stand-in policy: each prompt prefilled gets the next of
// its completions, one token per step (each step a little slow, so that a
// stream sees the completion grow). It records the prompts.
type scripted struct {
	mu          sync.Mutex
	completions [][]int32
	prompts     [][]int32
	left        [][]int32 // per slot: what it still generates
}

func (d *scripted) Slots() int  { return 1 }
func (d *scripted) MaxLen() int { return 4096 }
func (d *scripted) Prefill(slot int, ids []int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	p := make([]int32, len(ids))
	for i, id := range ids {
		p[i] = int32(id)
	}
	d.prompts = append(d.prompts, p)
	d.left[slot], d.completions = d.completions[0], d.completions[1:]
	return nil
}
func (d *scripted) PrefillBatch(slots []int, ids [][]int64) error {
	for i, sl := range slots {
		if err := d.Prefill(sl, ids[i]); err != nil {
			return err
		}
	}
	return nil
}
func (d *scripted) CopySlot(src, dst int) error      { return nil }
func (d *scripted) Release(slot int) error           { return nil }
func (d *scripted) Seed(slot int, seed uint64) error { return nil }
func (d *scripted) Step(slots []int, _ decoding.Sampling, tokens []int64, logprobs []float32) error {
	time.Sleep(2 * time.Millisecond)
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, sl := range slots {
		tokens[i], logprobs[i] = int64(d.left[sl][0]), -0.5
		d.left[sl] = d.left[sl][1:]
	}
	return nil
}
func (d *scripted) PendingLogits(slot int) ([]float32, error) { return nil, nil }

// `trainer serve` on a Llama 3 policy: its bare JSON call comes back as
// tool_calls (finish "tool_calls", no content), streamed too with no
// content sent before it; the call sent back renders the tokens the model
// generated, so the next prompt extends prompt and completion; a call
// written with Hermes' "arguments" is content; the answer streams as
// content.
func TestLlamaToolCalls(t *testing.T) {
	tools := []json.RawMessage{json.RawMessage(gatewaytest.ToolJSON)}
	callText := toolcall.LlamaToolCall(gatewaytest.ToolName, gatewaytest.QueryArgs)
	bad := `{"name": "search", "arguments": ` + gatewaytest.QueryArgs + `}`
	msgs := []tokenizer.Message{{Role: "system", Content: gatewaytest.System}, {Role: "user", Content: gatewaytest.Question},
		{Role: "assistant", ToolCalls: []tokenizer.ToolCall{{Name: gatewaytest.ToolName, Arguments: json.RawMessage(gatewaytest.QueryArgs)}}},
		{Role: "tool", Content: gatewaytest.Response}, {Role: "assistant", Content: gatewaytest.Answer}}
	text, err := tokenizertest.LlamaFormat(t).RenderText(msgs, tools, false)
	if err != nil {
		t.Fatal(err)
	}
	f := tokenizertest.LlamaFormat(t, text, bad)
	tok := f.Tokenizer()
	eot, _ := f.Special(toolcall.LlamaEOT)
	gen := func(s string) []int32 {
		ids := tok.Encode(s)
		if tok.Decode(ids, false) != s {
			t.Fatalf("the test tokenizer does not spell %q", s)
		}
		return append(ids, eot)
	}
	dec := &scripted{completions: [][]int32{gen(callText), gen(callText), gen(bad), gen(gatewaytest.Answer)}, left: make([][]int32, 1)}
	sched := gateway.NewScheduler(dec, f.StopIDs())
	stop := runScheduler(sched)
	defer stop()
	srv := httptest.NewServer(&gateway.Handler{Scheduler: sched, Format: f, Model: "tiny"})
	defer srv.Close()

	c := postOK(t, srv.URL, firstTurn(nil), "")
	ch := c.Choices[0]
	if ch.FinishReason != "tool_calls" || ch.Message.Content != nil || len(ch.Message.ToolCalls) != 1 {
		t.Fatalf("choice %+v, want one tool call", ch)
	}
	call := ch.Message.ToolCalls[0]
	if fn := call["function"].(map[string]any); fn["name"] != gatewaytest.ToolName || fn["arguments"] != gatewaytest.QueryArgs {
		t.Fatalf("tool call %v", call)
	}

	status, body := post(t, srv.URL, firstTurn(map[string]any{"stream": true}), "")
	chunks, done := sse(t, body)
	var streamed map[string]any
	finish := ""
	for _, chunk := range chunks {
		chc := chunk["choices"].([]any)[0].(map[string]any)
		delta := chc["delta"].(map[string]any)
		if s, ok := delta["content"].(string); ok && s != "" {
			t.Errorf("streamed content %q of a call", s)
		}
		if tc, ok := delta["tool_calls"].([]any); ok {
			streamed = tc[0].(map[string]any)
		}
		if fr, ok := chc["finish_reason"].(string); ok {
			finish = fr
		}
	}
	if status != 200 || !done || finish != "tool_calls" || streamed == nil || streamed["function"].(map[string]any)["arguments"] != gatewaytest.QueryArgs {
		t.Fatalf("stream: status %d, done %v, finish %q, call %v (%d chunks)", status, done, finish, streamed, len(chunks))
	}

	c = postOK(t, srv.URL, firstTurn(nil), "")
	if ch := c.Choices[0]; ch.FinishReason != "stop" || ch.Message.Content == nil || *ch.Message.Content != bad || ch.Message.ToolCalls != nil {
		t.Fatalf("a call with \"arguments\": %+v, want it as content", ch)
	}

	req := secondTurn(call)
	req["stream"] = true
	_, body = post(t, srv.URL, req, "")
	chunks, done = sse(t, body)
	var content strings.Builder
	for _, chunk := range chunks {
		chc := chunk["choices"].([]any)[0].(map[string]any)
		if s, ok := chc["delta"].(map[string]any)["content"].(string); ok {
			content.WriteString(s)
		}
	}
	if !done || content.String() != gatewaytest.Answer {
		t.Fatalf("streamed answer %q, want %q", content.String(), gatewaytest.Answer)
	}
	first, second := dec.prompts[0], dec.prompts[3]
	if want := append(slices.Clone(first), gen(callText)...); !slices.Equal(second[:min(len(want), len(second))], want) {
		t.Errorf("the second prompt does not extend the first prompt and its call:\n%q\nwant a prefix\n%q", tok.Decode(second, false), tok.Decode(want, false))
	}
}
