package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/gateway/gatewaytest"
	"github.com/agentrl/agentrl/tokenizer"
)

// post sends body (JSON-encoded unless a string) and returns the status
// and the raw answer.
func post(t *testing.T, url string, body any, key string) (int, []byte) {
	t.Helper()
	status, out, err := postRaw(url, body, key)
	if err != nil {
		t.Fatal(err)
	}
	return status, out
}

func postRaw(url string, body any, key string) (int, []byte, error) {
	var b []byte
	if s, ok := body.(string); ok {
		b = []byte(s)
	} else {
		b, _ = json.Marshal(body)
	}
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}

// firstTurn is the learned conversation's opening request: system, user
// and the search tool.
func firstTurn(extra map[string]any) map[string]any {
	req := map[string]any{"model": "tiny", "messages": []map[string]any{
		{"role": "system", "content": gatewaytest.System},
		{"role": "user", "content": gatewaytest.Question}},
		"tools": []json.RawMessage{json.RawMessage(gatewaytest.ToolJSON)}, "temperature": 0}
	for k, v := range extra {
		req[k] = v
	}
	return req
}

// secondTurn continues firstTurn with the assistant's call (as the API
// returned it) and the tool's answer.
func secondTurn(call map[string]any) map[string]any {
	req := firstTurn(nil)
	req["messages"] = append(req["messages"].([]map[string]any),
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{call}},
		map[string]any{"role": "tool", "tool_call_id": call["id"], "content": gatewaytest.Response})
	return req
}

// completion is the documented chat.completion object.
type completion struct {
	ID                string  `json:"id"`
	Object            string  `json:"object"`
	Created           int64   `json:"created"`
	Model             string  `json:"model"`
	SystemFingerprint *string `json:"system_fingerprint"`
	Choices           []struct {
		Index   int `json:"index"`
		Message struct {
			Role      string           `json:"role"`
			Content   *string          `json:"content"`
			ToolCalls []map[string]any `json:"tool_calls"`
		} `json:"message"`
		Logprobs *struct {
			Content []struct {
				Token       string  `json:"token"`
				Logprob     float64 `json:"logprob"`
				Bytes       []int   `json:"bytes"`
				TopLogprobs []struct {
					Token   string  `json:"token"`
					Logprob float64 `json:"logprob"`
				} `json:"top_logprobs"`
			} `json:"content"`
		} `json:"logprobs"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

// postOK posts and decodes a 200 answer.
func postOK(t *testing.T, url string, body any, key string) completion {
	t.Helper()
	status, out := post(t, url, body, key)
	return decode(t, status, out)
}

func decode(t *testing.T, status int, body []byte) completion {
	t.Helper()
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var c completion
	if err := json.Unmarshal(body, &c); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return c
}

// renderLen is the token count of msgs rendered by the chat template.
func renderLen(t *testing.T, f *tokenizer.ChatFormat, msgs []tokenizer.Message, gen bool) int {
	t.Helper()
	ids, _, err := f.Render(msgs, []json.RawMessage{json.RawMessage(gatewaytest.ToolJSON)}, gen)
	if err != nil {
		t.Fatal(err)
	}
	return len(ids)
}

// A tool call and then an answer, through the documented shapes. Token
// counts: the first prompt is the template's rendering of system + user
// with the generation prompt (P1); the model stops at "</tool_call>", so
// its completion is the call's text encoded. The second completion is the
// reply and its "<|im_end|>": R5 - P2 - 1, where R5 renders the whole
// conversation and P2 its first four messages with the generation prompt
// ("\n" after "<|im_end|>" is the template's).
func TestToolCallThenAnswer(t *testing.T) {
	s := serve(t, 2, false, nil)
	msgs, f := gatewaytest.Messages(), s.model.Format
	c := postOK(t, s.srv.URL, firstTurn(nil), "")
	if c.Object != "chat.completion" || !strings.HasPrefix(c.ID, "chatcmpl-") || c.Model != "tiny" || c.Created == 0 || c.SystemFingerprint == nil {
		t.Fatalf("envelope %+v", c)
	}
	if len(c.Choices) != 1 {
		t.Fatalf("%d choices", len(c.Choices))
	}
	ch := c.Choices[0]
	if ch.FinishReason != "tool_calls" || ch.Message.Role != "assistant" || ch.Message.Content != nil || len(ch.Message.ToolCalls) != 1 {
		t.Fatalf("choice %+v", ch)
	}
	call := ch.Message.ToolCalls[0]
	fn := call["function"].(map[string]any)
	if id, _ := call["id"].(string); !strings.HasPrefix(id, "call_") || call["type"] != "function" || fn["name"] != "search" || fn["arguments"] != gatewaytest.QueryArgs {
		t.Fatalf("tool call %v", call)
	}
	p1 := renderLen(t, f, msgs[:2], true)
	if want := len(f.Tokenizer().Encode(gatewaytest.Call)); c.Usage.PromptTokens != p1 || c.Usage.CompletionTokens != want || c.Usage.TotalTokens != p1+want {
		t.Fatalf("usage %+v, want %d + %d", c.Usage, p1, want)
	}

	c2 := postOK(t, s.srv.URL, secondTurn(call), "")
	ch = c2.Choices[0]
	if ch.FinishReason != "stop" || ch.Message.Content == nil || *ch.Message.Content != gatewaytest.Reply || len(ch.Message.ToolCalls) != 0 {
		t.Fatalf("second choice %+v", ch)
	}
	p2 := renderLen(t, f, msgs[:4], true)
	if want := renderLen(t, f, msgs, false) - p2 - 1; c2.Usage.PromptTokens != p2 || c2.Usage.CompletionTokens != want {
		t.Fatalf("usage %+v, want %d + %d", c2.Usage, p2, want)
	}
}

// With tool_choice "none" the same output is plain content, and a stop
// string cuts the content before it and ends the choice with "stop".
func TestToolChoiceNoneAndStop(t *testing.T) {
	s := serve(t, 1, false, nil)
	c := postOK(t, s.srv.URL, firstTurn(map[string]any{"tool_choice": "none"}), "")
	call := gatewaytest.Call
	if ch := c.Choices[0]; ch.FinishReason != "stop" || ch.Message.Content == nil || *ch.Message.Content != call || ch.Message.ToolCalls != nil {
		t.Fatalf("tool_choice none: %+v", ch)
	}
	full := c.Usage.CompletionTokens
	c = postOK(t, s.srv.URL, firstTurn(map[string]any{"stop": []string{"composer"}}), "")
	want := call[:strings.Index(call, "composer")]
	if ch := c.Choices[0]; ch.FinishReason != "stop" || ch.Message.Content == nil || *ch.Message.Content != want || c.Usage.CompletionTokens >= full {
		t.Fatalf("stop: %+v (%d of %d tokens)", ch, c.Usage.CompletionTokens, full)
	}
	c = postOK(t, s.srv.URL, firstTurn(map[string]any{"max_tokens": 3}), "")
	if ch := c.Choices[0]; ch.FinishReason != "length" || c.Usage.CompletionTokens != 3 {
		t.Fatalf("max_tokens 3: %+v %+v", ch, c.Usage)
	}
	c = postOK(t, s.srv.URL, firstTurn(map[string]any{"max_completion_tokens": 2, "max_tokens": 9}), "")
	if c.Usage.CompletionTokens != 2 {
		t.Fatalf("max_completion_tokens 2 over max_tokens 9: %+v", c.Usage)
	}
}

// logprobs: one entry per content token (the closing "<|im_end|>" is not
// content), top_logprobs sorted with the chosen token first under greedy
// decoding, its logprob the one the decoder recorded (the two are computed
// apart: in the decode step, and from the pending logits).
func TestLogprobs(t *testing.T) {
	s := serve(t, 1, false, nil)
	c := postOK(t, s.srv.URL, secondTurn(map[string]any{"id": "call_1", "type": "function",
		"function": map[string]any{"name": "search", "arguments": gatewaytest.QueryArgs}}), "")
	// The reply, then "<|im_end|>".
	ch := c.Choices[0]
	if ch.Logprobs != nil {
		t.Fatalf("logprobs given unasked")
	}
	req := secondTurn(map[string]any{"id": "call_1", "type": "function", "function": map[string]any{"name": "search", "arguments": gatewaytest.QueryArgs}})
	req["logprobs"], req["top_logprobs"] = true, 3
	c = postOK(t, s.srv.URL, req, "")
	ch = c.Choices[0]
	if ch.Logprobs == nil || len(ch.Logprobs.Content) != c.Usage.CompletionTokens-1 {
		t.Fatalf("logprobs %+v for %d tokens", ch.Logprobs, c.Usage.CompletionTokens)
	}
	var text strings.Builder
	for _, e := range ch.Logprobs.Content {
		text.WriteString(e.Token)
		if len(e.TopLogprobs) != 3 || e.TopLogprobs[0].Token != e.Token || e.Logprob > 0 ||
			abs(e.TopLogprobs[0].Logprob-e.Logprob) > 1e-4 || e.TopLogprobs[1].Logprob > e.TopLogprobs[0].Logprob ||
			e.TopLogprobs[2].Logprob > e.TopLogprobs[1].Logprob || len(e.Bytes) != len(e.Token) {
			t.Fatalf("entry %+v", e)
		}
	}
	if text.String() != gatewaytest.Reply {
		t.Fatalf("tokens spell %q", text.String())
	}
}

func abs(x float64) float64 { return max(x, -x) }

// n choices with a seed: n distinct indices, and the same seed gives the
// same choices again.
func TestNAndSeed(t *testing.T) {
	s := serve(t, 4, false, nil)
	req := map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "Say hello in one word."}},
		"n": 3, "seed": 11, "temperature": 1.5, "max_tokens": 12}
	a := postOK(t, s.srv.URL, req, "")
	b := postOK(t, s.srv.URL, req, "")
	if len(a.Choices) != 3 {
		t.Fatalf("%d choices", len(a.Choices))
	}
	var ta, tb []string
	for i := range a.Choices {
		if a.Choices[i].Index != i {
			t.Fatalf("choice %d has index %d", i, a.Choices[i].Index)
		}
		ta, tb = append(ta, *a.Choices[i].Message.Content), append(tb, *b.Choices[i].Message.Content)
	}
	if !slices.Equal(ta, tb) {
		t.Fatalf("same seed, different choices:\n%q\n%q", ta, tb)
	}
}

// sse reads a stream's events: the JSON chunks and whether it ended with
// "data: [DONE]".
func sse(t *testing.T, body []byte) ([]map[string]any, bool) {
	t.Helper()
	var chunks []map[string]any
	done := false
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || done {
			t.Fatalf("unexpected line %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c map[string]any
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		chunks = append(chunks, c)
	}
	return chunks, done
}

// Streaming: chat.completion.chunk events sharing one id, the role first,
// the tool call whole with its index, finish_reason "tool_calls", the usage
// in a last chunk with no choices (and "usage": null on the others, as the
// API documents for stream_options.include_usage), then "data: [DONE]";
// the answer's content deltas add up to the answer, and without
// include_usage no chunk has a usage field.
func TestStreaming(t *testing.T) {
	s := serve(t, 1, false, nil)
	status, body := post(t, s.srv.URL, firstTurn(map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true}}), "")
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	chunks, done := sse(t, body)
	if !done || len(chunks) < 3 {
		t.Fatalf("%d chunks, done %v", len(chunks), done)
	}
	id := chunks[0]["id"]
	var call map[string]any
	var finish string
	for i, c := range chunks {
		if c["object"] != "chat.completion.chunk" || c["id"] != id || c["model"] != "tiny" {
			t.Fatalf("chunk %d: %v", i, c)
		}
		choices := c["choices"].([]any)
		if u, ok := c["usage"]; !ok || (u == nil) != (i < len(chunks)-1) {
			t.Fatalf("chunk %d: usage %v (present %v), want null on every chunk but the last", i, u, ok)
		}
		if i == len(chunks)-1 {
			u := c["usage"].(map[string]any)
			if len(choices) != 0 || u["completion_tokens"].(float64) < 1 || u["total_tokens"].(float64) != u["prompt_tokens"].(float64)+u["completion_tokens"].(float64) {
				t.Fatalf("usage chunk %v", c)
			}
			continue
		}
		ch := choices[0].(map[string]any)
		delta := ch["delta"].(map[string]any)
		if i == 0 && delta["role"] != "assistant" {
			t.Fatalf("first delta %v", delta)
		}
		if tc, ok := delta["tool_calls"].([]any); ok {
			call = tc[0].(map[string]any)
		}
		if fr, ok := ch["finish_reason"].(string); ok {
			finish = fr
		}
	}
	if finish != "tool_calls" || call == nil || call["index"].(float64) != 0 || call["function"].(map[string]any)["arguments"] != gatewaytest.QueryArgs {
		t.Fatalf("finish %q, call %v", finish, call)
	}
	delete(call, "index")
	req := secondTurn(call)
	req["stream"] = true
	_, body = post(t, s.srv.URL, req, "")
	chunks, done = sse(t, body)
	var content strings.Builder
	for _, c := range chunks {
		ch := c["choices"].([]any)[0].(map[string]any)
		if d, ok := ch["delta"].(map[string]any)["content"].(string); ok {
			content.WriteString(d)
		}
		if fr, ok := ch["finish_reason"].(string); ok {
			finish = fr
		}
	}
	for _, c := range chunks {
		if _, ok := c["usage"]; ok {
			t.Fatalf("a usage field without include_usage: %v", c)
		}
	}
	if !done || content.String() != gatewaytest.Reply || finish != "stop" {
		t.Fatalf("streamed %q, finish %q, done %v", content.String(), finish, done)
	}
}
