package vllm

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/decoding"
)

// fakeCompletions serves /v1/completions: it hands each request's body,
// decoded as generic JSON, to check and answers with answer.
func fakeCompletions(t *testing.T, check func(map[string]any), answer string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/completions" {
			t.Errorf("request %s %s, want POST /v1/completions", r.Method, r.URL.Path)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q, want application/json", ct)
		}
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("request body: %v", err)
		}
		if check != nil {
			check(body)
		}
		io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(srv.URL, 0)
	if err != nil {
		t.Fatal(err)
	}
	c.model = "tiny"
	return c
}

// answer is a completion of ids with logprobs lps, finished by finish
// with stop_reason stop (JSON).
func answer(ids []int64, lps []float64, finish, stop string) string {
	type lp struct {
		TokenLogprobs []float64 `json:"token_logprobs"`
		Tokens        []string  `json:"tokens"`
		TextOffset    []int     `json:"text_offset"`
	}
	toks := make([]string, len(ids))
	for i, id := range ids {
		toks[i] = "token_id:" + itoa(id)
	}
	b, _ := json.Marshal(map[string]any{
		"id": "cmpl-1", "object": "text_completion", "model": "tiny",
		"choices": []map[string]any{{
			"index": 0, "text": "", "token_ids": ids,
			"logprobs":      lp{lps, toks, make([]int, len(ids))},
			"finish_reason": finish, "stop_reason": json.RawMessage(stop),
		}},
	})
	return string(b)
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

// The request carries the prompt as ids and every sampling setting
// explicitly, everything vLLM could otherwise take from the model's
// generation_config switched off; the answer's ids and logprobs come back
// as they were sent.
func TestGenerateSendsIDsAndReadsIDs(t *testing.T) {
	seed := uint64(1234)
	want := map[string]any{
		"model": "tiny", "prompt": []any{1.0, 2.0, 3.0}, "max_tokens": 4.0,
		"temperature": 0.7, "top_p": 0.9, "top_k": 5.0, "min_p": 0.0,
		"repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0,
		"stop_token_ids": []any{7.0, 9.0}, "ignore_eos": true, "seed": 1234.0,
		"n": 1.0, "stream": false, "logprobs": 0.0,
		"return_tokens_as_token_ids": true, "return_token_ids": true,
		"skip_special_tokens": false, "include_stop_str_in_output": true,
	}
	c := fakeCompletions(t, func(body map[string]any) {
		if !reflect.DeepEqual(body, want) {
			t.Errorf("request body\n%v\nwant\n%v", body, want)
		}
	}, answer([]int64{11, 12, 9}, []float64{-0.5, -1.25, -0.0078125}, "stop", "9"))
	got, err := c.Generate(context.Background(), Request{
		Prompt: []int64{1, 2, 3}, Sampling: decoding.Sampling{Temperature: 0.7, TopK: 5, TopP: 0.9},
		MaxTokens: 4, StopIDs: []int64{7, 9}, Seed: &seed,
	})
	if err != nil {
		t.Fatal(err)
	}
	wantC := Completion{Tokens: []int64{11, 12, 9}, Logprobs: []float32{-0.5, -1.25, -0.0078125}, FinishReason: "stop", StopID: 9}
	if !reflect.DeepEqual(got, wantC) {
		t.Errorf("completion %+v, want %+v", got, wantC)
	}
}

// Sampling maps as the built-in engine reads it: greedy is temperature 0
// with top-k and top-p off (the built-in engine ignores them, and vLLM's
// processed logprobs would not), a top-k <= 0 and a top-p outside (0, 1)
// are off; no seed sends none.
func TestGenerateSamplingMapping(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    decoding.Sampling
		want map[string]any
	}{
		{"greedy", decoding.Sampling{}, map[string]any{"temperature": 0.0, "top_p": 1.0, "top_k": 0.0}},
		{"negative temperature", decoding.Sampling{Temperature: -1}, map[string]any{"temperature": 0.0, "top_p": 1.0, "top_k": 0.0}},
		{"greedy with filters", decoding.Sampling{TopK: 5, TopP: 0.9}, map[string]any{"temperature": 0.0, "top_p": 1.0, "top_k": 0.0}},
		{"filters off", decoding.Sampling{Temperature: 1, TopK: -3, TopP: 1.5}, map[string]any{"temperature": 1.0, "top_p": 1.0, "top_k": 0.0}},
		{"top-p 1", decoding.Sampling{Temperature: 1.3, TopK: 40, TopP: 1}, map[string]any{"temperature": 1.3, "top_p": 1.0, "top_k": 40.0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeCompletions(t, func(body map[string]any) {
				for k, v := range tc.want {
					if body[k] != v {
						t.Errorf("%s = %v, want %v", k, body[k], v)
					}
				}
				if _, ok := body["seed"]; ok {
					t.Errorf("seed %v sent, want none", body["seed"])
				}
				if _, ok := body["prompt_logprobs"]; ok {
					t.Errorf("prompt_logprobs %v sent, want none", body["prompt_logprobs"])
				}
				if ids, ok := body["stop_token_ids"].([]any); !ok || len(ids) != 0 {
					t.Errorf("stop_token_ids %v, want []", body["stop_token_ids"])
				}
			}, answer([]int64{5}, []float64{-1}, "length", "null"))
			got, err := c.Generate(context.Background(), Request{Prompt: []int64{0}, Sampling: tc.s, MaxTokens: 1})
			if err != nil {
				t.Fatal(err)
			}
			if got.StopID != -1 || got.FinishReason != "length" {
				t.Errorf("stop id %d finish %q, want -1 length", got.StopID, got.FinishReason)
			}
		})
	}
}

// Prompt logprobs are read from vLLM's prompt_logprobs: null for the first
// token, then maps from token ids to {logprob, rank, decoded_token}.
func TestGeneratePromptLogprobs(t *testing.T) {
	ans := `{"choices":[{"token_ids":[4],"logprobs":{"token_logprobs":[-2],"tokens":["token_id:4"]},
		"finish_reason":"length","stop_reason":null,
		"prompt_logprobs":[null,{"8":{"logprob":-3.5,"rank":2,"decoded_token":null},"1":{"logprob":-0.1,"rank":1}},{"9":{"logprob":-0.25,"rank":1}}]}]}`
	c := fakeCompletions(t, func(body map[string]any) {
		if body["prompt_logprobs"] != 0.0 {
			t.Errorf("prompt_logprobs %v, want 0", body["prompt_logprobs"])
		}
	}, ans)
	got, err := c.Generate(context.Background(), Request{Prompt: []int64{3, 8, 9}, Sampling: decoding.Sampling{}, MaxTokens: 1, PromptLogprobs: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []float32{-3.5, -0.25}; !reflect.DeepEqual(got.PromptLogprobs, want) {
		t.Errorf("prompt logprobs %v, want %v", got.PromptLogprobs, want)
	}
}

// A request that cannot be sent is refused before it is.
func TestGenerateRefusesBadRequests(t *testing.T) {
	c := fakeCompletions(t, func(map[string]any) { t.Error("request sent") }, "")
	big := uint64(math.MaxInt64) + 1
	for _, tc := range []struct {
		r    Request
		want string
	}{
		{Request{MaxTokens: 1}, "empty prompt"},
		{Request{Prompt: []int64{1, -2}, MaxTokens: 1}, "prompt token 1 is -2"},
		{Request{Prompt: []int64{1}}, "max tokens 0"},
		{Request{Prompt: []int64{1}, MaxTokens: 1, Seed: &big}, "does not fit vLLM's int64"},
	} {
		if _, err := c.Generate(context.Background(), tc.r); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.r, err, tc.want)
		}
	}
}

// Every malformed answer is an error naming what is wrong with it.
func TestGenerateMalformedAnswers(t *testing.T) {
	ok := answer([]int64{5, 6}, []float64{-1, -2}, "length", "null")
	for _, tc := range []struct {
		name, answer, want string
		prompt             bool
	}{
		{"not JSON", `{"choices": [`, "malformed response", false},
		{"no choices", `{"choices": []}`, "0 choices, want 1", false},
		{"no token ids", strings.Replace(ok, `"token_ids"`, `"other"`, 1), "no choices[0].token_ids", false},
		{"no logprobs", `{"choices":[{"token_ids":[5],"finish_reason":"length"}]}`, "no choices[0].logprobs", false},
		{"no finish reason", strings.Replace(ok, `"finish_reason"`, `"other"`, 1), "no choices[0].finish_reason", false},
		{"fewer logprobs", answer([]int64{5, 6}, []float64{-1}, "length", "null"), "2 token ids but 1 logprobs", false},
		{"no tokens", answer([]int64{}, []float64{}, "length", "null"), "0 tokens sampled", false},
		{"too many tokens", answer([]int64{1, 2, 3}, []float64{-1, -1, -1}, "length", "null"), "3 tokens sampled, want 1 to max tokens 2", false},
		{"logprob of another token", strings.Replace(ok, `"token_id:6"`, `"token_id:7"`, 1), `token 1 is id 6 but its logprob is of "token_id:7"`, false},
		{"null logprob", strings.Replace(ok, `[-1,-2]`, `[-1,null]`, 1), "token 1 (id 6) has no logprob", false},
		{"stop without id", answer([]int64{5, 6}, []float64{-1, -2}, "stop", `"</s>"`), "want a stop id", false},
		{"stop id not last", answer([]int64{5, 6}, []float64{-1, -2}, "stop", "5"), "stopped by id 5, but the last token is 6", false},
		{"aborted", answer([]int64{5, 6}, []float64{-1, -2}, "abort", "null"), `finish reason "abort"`, false},
		{"prompt logprobs short", ok, "0 prompt logprobs for 2 prompt tokens", true},
		{"prompt logprob of another token", strings.Replace(ok, `"finish_reason"`, `"prompt_logprobs":[null,{"3":{"logprob":-1}}],"finish_reason"`, 1), "prompt logprob 1 has no entry for its token 4", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeCompletions(t, nil, tc.answer)
			_, err := c.Generate(context.Background(), Request{Prompt: []int64{3, 4}, MaxTokens: 2, PromptLogprobs: tc.prompt})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), c.base+"/v1/completions") {
				t.Errorf("error %v, want one naming %s/v1/completions and %q", err, c.base, tc.want)
			}
		})
	}
}

// A server that is gone, refuses, answers an error, hangs up or is slow
// gives an error that names the server and says which.
func TestGenerateTransportFailures(t *testing.T) {
	req := Request{Prompt: []int64{1}, MaxTokens: 1}
	t.Run("gone", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		addr := srv.URL
		srv.Close()
		c, _ := NewClient(addr, 0)
		_, err := c.Generate(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), "cannot connect") || !strings.Contains(err.Error(), addr) {
			t.Errorf("error %v, want cannot connect to %s", err, addr)
		}
	})
	t.Run("error status", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"This model's maximum context length is 32 tokens","type":"BadRequestError","param":null,"code":400}}`)
		}))
		defer srv.Close()
		c, _ := NewClient(srv.URL, 0)
		_, err := c.Generate(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), "400 Bad Request: This model's maximum context length is 32 tokens") {
			t.Errorf("error %v, want the status and vLLM's message", err)
		}
	})
	t.Run("not found", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"detail":"Not Found"}`)
		}))
		defer srv.Close()
		c, _ := NewClient(srv.URL, 0)
		_, err := c.Generate(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), `404 Not Found: "Not Found"`) {
			t.Errorf("error %v, want the status and FastAPI's detail", err)
		}
	})
	t.Run("hangs up", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}))
		defer srv.Close()
		c, _ := NewClient(srv.URL, 0)
		_, err := c.Generate(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), "closed the connection") {
			t.Errorf("error %v, want the server closed the connection", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer close(release)
		c, _ := NewClient(srv.URL, 50*time.Millisecond)
		_, err := c.Generate(context.Background(), req)
		if err == nil || !strings.Contains(err.Error(), "no answer within the request timeout 50ms") {
			t.Errorf("error %v, want the request timeout", err)
		}
	})
}

func TestNewClientRefusesBadAddresses(t *testing.T) {
	for _, a := range []string{"", "localhost:8000", "ftp://x", "http://"} {
		if _, err := NewClient(a, 0); err == nil || !strings.Contains(err.Error(), "want http://host:port") {
			t.Errorf("NewClient(%q): error %v", a, err)
		}
	}
}

// A request naming a model (LoRA adapters the server loaded) sends that
// name in place of the served model's.
func TestGenerateNamesTheAdapters(t *testing.T) {
	c := fakeCompletions(t, func(body map[string]any) {
		if body["model"] != "policy" {
			t.Errorf("model %v, want policy", body["model"])
		}
	}, answer([]int64{5}, []float64{-1}, "length", "null"))
	if _, err := c.Generate(context.Background(), Request{Model: "policy", Prompt: []int64{0}, MaxTokens: 1}); err != nil {
		t.Fatal(err)
	}
}
