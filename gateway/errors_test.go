package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/gateway"
)

// errorBody checks the documented error object: exactly "error" with
// message, type, param and code, and returns it.
func errorBody(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var outer map[string]map[string]any
	if err := json.Unmarshal(body, &outer); err != nil || len(outer) != 1 {
		t.Fatalf("not an error object: %s", body)
	}
	e := outer["error"]
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := e[k]; !ok {
			t.Fatalf("error has no %q: %s", k, body)
		}
	}
	if len(e) != 4 || e["message"] == "" {
		t.Fatalf("error object %s", body)
	}
	return e
}

// Bad requests, each a 400 invalid_request_error naming its field; unknown
// fields are ignored. The window is the decoder's 256 tokens: 300 asked
// completion tokens exceed it with any prompt.
func TestBadRequests(t *testing.T) {
	s := serve(t, 1, false, nil)
	cases := []struct {
		name  string
		body  any
		param any // nil: the error names no field
	}{
		{"malformed JSON", `{"model": "tiny", "messages": [`, nil},
		{"not an object", `[1, 2]`, nil},
		{"messages not an array", `{"model": "tiny", "messages": "hi"}`, "messages"},
		{"temperature a string", firstTurn(map[string]any{"temperature": "hot"}), "temperature"},
		{"temperature out of range", firstTurn(map[string]any{"temperature": 2.5}), "temperature"},
		{"max_tokens fractional", firstTurn(map[string]any{"max_tokens": 1.5}), "max_tokens"},
		{"n zero", firstTurn(map[string]any{"n": 0}), "n"},
		{"n above the slots", firstTurn(map[string]any{"n": 2}), "n"},
		{"stream a string", firstTurn(map[string]any{"stream": "yes"}), "stream"},
		{"top_logprobs without logprobs", firstTurn(map[string]any{"top_logprobs": 2}), "top_logprobs"},
		{"unknown model", firstTurn(map[string]any{"model": "gpt-4o"}), "model"},
		{"missing model", `{"messages": [{"role": "user", "content": "hi"}]}`, "model"},
		{"context over the window", firstTurn(map[string]any{"max_tokens": 300}), "messages"},
		{"content a number", `{"model": "tiny", "messages": [{"role": "user", "content": 5}]}`, "messages[0].content"},
		{"unknown role", `{"model": "tiny", "messages": [{"role": "robot", "content": "hi"}]}`, "messages[0].role"},
		{"tool reply to no call", `{"model": "tiny", "messages": [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "y"}]}`, "messages[1].role"},
		{"arguments not JSON", `{"model": "tiny", "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{oops"}}]}]}`, "messages[1].tool_calls[0].function.arguments"},
		{"tool without a name", firstTurn(map[string]any{"tools": []any{map[string]any{"type": "function", "function": map[string]any{}}}}), "tools[0].function.name"},
		{"tool_choice required", firstTurn(map[string]any{"tool_choice": "required"}), "tool_choice"},
		{"stop of five", firstTurn(map[string]any{"stop": []string{"a", "b", "c", "d", "e"}}), "stop"},
	}
	for _, c := range cases {
		status, body := post(t, s.srv.URL, c.body, "")
		if status != http.StatusBadRequest {
			t.Errorf("%s: status %d: %s", c.name, status, body)
			continue
		}
		e := errorBody(t, body)
		if e["type"] != "invalid_request_error" || e["param"] != c.param {
			t.Errorf("%s: type %v, param %v, want %v: %s", c.name, e["type"], e["param"], c.param, body)
		}
	}
	status, body := post(t, s.srv.URL, firstTurn(map[string]any{"max_tokens": 300}), "")
	if e := errorBody(t, body); status != 400 || e["code"] != "context_length_exceeded" || !strings.Contains(e["message"].(string), "maximum context length is 256 tokens") {
		t.Fatalf("context error %d %s", status, body)
	}
	// Fields the server does not know are ignored, as OpenAI does.
	postOK(t, s.srv.URL, firstTurn(map[string]any{"frequency_penalty": 0.5, "user": "u1", "metadata": map[string]any{"a": 1},
		"parallel_tool_calls": true, "some_future_field": []int{1}}), "")
}

// GET /v1/models lists the served model; other paths are 404 and other
// methods 405, all as error objects.
func TestModelsAndRoutes(t *testing.T) {
	s := serve(t, 1, false, nil)
	resp, err := http.Get(s.srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object, OwnedBy string
			Created             int64
		} `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != "tiny" || list.Data[0].Object != "model" {
		t.Fatalf("models %+v", list)
	}
	for _, c := range []struct {
		method, path string
		status       int
	}{{"GET", "/v1/completions", 404}, {"GET", "/v1/chat/completions", 405}, {"POST", "/v1/models", 405}} {
		req, _ := http.NewRequest(c.method, s.srv.URL+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body [4096]byte
		n, _ := resp.Body.Read(body[:])
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Fatalf("%s %s: %d", c.method, c.path, resp.StatusCode)
		}
		errorBody(t, body[:n])
	}
}

// A server with an API key refuses requests without it or with another
// one (401, invalid_api_key) and answers with it.
func TestAPIKey(t *testing.T) {
	s := serve(t, 1, false, func(h *gateway.Handler) { h.APIKey = "sk-right" })
	for _, key := range []string{"", "sk-wrong"} {
		status, body := post(t, s.srv.URL, firstTurn(nil), key)
		if e := errorBody(t, body); status != 401 || e["code"] != "invalid_api_key" {
			t.Fatalf("key %q: %d %s", key, status, body)
		}
	}
	postOK(t, s.srv.URL, firstTurn(nil), "sk-right")
}
