// Package vllm is agentrl's client of an external vLLM server, the engine a
// user may choose when a model or a batch outgrows the built-in one: the
// server started and supervised or found running (Start), token-in /
// token-out generation over /v1/completions (Client.Generate: prompt ids
// in, sampled ids and their log-probabilities out, nothing decoded or
// re-encoded), and the weight updates after each training step
// (Client.ReloadWeights from a safetensors checkpoint, the route vLLM's CPU
// build supports, and the control plane of vLLM's weight-transfer API for
// NCCL on the GPU).
//
// It speaks only HTTP and JSON: no Python runs in agentrl, vLLM is the
// user's process. The rollouts of rollout.engine vllm sample through it
// (trainer/rollout.VLLM).
package vllm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/agentrl/agentrl/decoding"
)

// maxResponse bounds the bytes of one response read.
const maxResponse = 256 << 20

// Client talks to one vLLM server's HTTP API.
type Client struct {
	base    string // the server's URL, no trailing slash
	http    *http.Client
	model   string // the served model's id, from /v1/models
	timeout time.Duration
}

// NewClient is a client of the server at address (http://host:port). A
// request taking longer than timeout fails (0: no limit beyond its
// context).
func NewClient(address string, timeout time.Duration) (*Client, error) {
	u, err := url.Parse(address)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("vllm: address %q, want http://host:port", address)
	}
	return &Client{base: strings.TrimRight(address, "/"), http: &http.Client{}, timeout: timeout}, nil
}

// Address is the server's base URL.
func (c *Client) Address() string { return c.base }

// Model is the id of the model the server serves, as /v1/models lists it
// (empty before Start found it).
func (c *Client) Model() string { return c.model }

// Request is one generation from token ids.
type Request struct {
	// Model is the model the completion names: "" for the one the server
	// serves, or the name of LoRA adapters it loaded (LoadAdapter).
	Model string
	// Prompt is the token ids the completion continues.
	Prompt []int64
	// Sampling is the decoding contract's sampling: Temperature <= 0 is
	// greedy, TopK <= 0 is off and so is a TopP outside (0, 1), as in the
	// built-in engine. Everything else vLLM could
	// change (min_p, penalties, the model's generation_config) is sent
	// switched off.
	Sampling decoding.Sampling
	// MaxTokens is the most tokens sampled (>= 1).
	MaxTokens int
	// StopIDs end the completion when sampled, the stop id included in its
	// tokens. Nothing else does: the model's own end-of-sequence ids stop
	// it only when listed here (ignore_eos is sent).
	StopIDs []int64
	// Seed, when not nil, seeds this request's sampling (at most
	// math.MaxInt64).
	Seed *uint64
	// PromptLogprobs asks for the log-probability of each prompt token
	// after the first, given those before it.
	PromptLogprobs bool
}

// Completion is what the server sampled.
type Completion struct {
	// Tokens are the sampled ids, in order.
	Tokens []int64
	// Logprobs[i] is the log-probability the server reports for Tokens[i]
	// (see docs/rollout-engines.md for which quantity that is).
	Logprobs []float32
	// PromptLogprobs[i] is the log-probability of Prompt[i+1] given
	// Prompt[:i+1], when asked for.
	PromptLogprobs []float32
	// FinishReason is vLLM's: "stop" (a stop id) or "length" (MaxTokens or
	// the model's context).
	FinishReason string
	// StopID is the stop id that ended the completion, or -1.
	StopID int64
}

// completionRequest is the body of POST /v1/completions, in vLLM's field
// names.
type completionRequest struct {
	Model                  string  `json:"model,omitempty"`
	Prompt                 []int64 `json:"prompt"`
	MaxTokens              int     `json:"max_tokens"`
	Temperature            float64 `json:"temperature"`
	TopP                   float64 `json:"top_p"`
	TopK                   int     `json:"top_k"`
	MinP                   float64 `json:"min_p"`
	RepetitionPenalty      float64 `json:"repetition_penalty"`
	PresencePenalty        float64 `json:"presence_penalty"`
	FrequencyPenalty       float64 `json:"frequency_penalty"`
	StopTokenIDs           []int64 `json:"stop_token_ids"`
	IgnoreEOS              bool    `json:"ignore_eos"`
	Seed                   *int64  `json:"seed,omitempty"`
	N                      int     `json:"n"`
	Stream                 bool    `json:"stream"`
	Logprobs               int     `json:"logprobs"`
	PromptLogprobs         *int    `json:"prompt_logprobs,omitempty"`
	ReturnTokensAsTokenIDs bool    `json:"return_tokens_as_token_ids"`
	ReturnTokenIDs         bool    `json:"return_token_ids"`
	SkipSpecialTokens      bool    `json:"skip_special_tokens"`
	IncludeStopStrInOutput bool    `json:"include_stop_str_in_output"`
}

// body maps r to vLLM's request, or says what of r cannot be sent.
func (c *Client) body(r Request) (completionRequest, error) {
	if len(r.Prompt) == 0 {
		return completionRequest{}, errors.New("empty prompt")
	}
	for i, id := range r.Prompt {
		if id < 0 {
			return completionRequest{}, fmt.Errorf("prompt token %d is %d, want >= 0", i, id)
		}
	}
	if r.MaxTokens < 1 {
		return completionRequest{}, fmt.Errorf("max tokens %d, want >= 1", r.MaxTokens)
	}
	s := r.Sampling
	model := c.model
	if r.Model != "" {
		model = r.Model
	}
	b := completionRequest{
		Model: model, Prompt: r.Prompt, MaxTokens: r.MaxTokens,
		Temperature: max(s.Temperature, 0), TopP: 1, TopK: 0,
		RepetitionPenalty: 1,
		StopTokenIDs:      append([]int64{}, r.StopIDs...), IgnoreEOS: true,
		N: 1, Logprobs: 0, ReturnTokensAsTokenIDs: true, ReturnTokenIDs: true,
		IncludeStopStrInOutput: true,
	}
	// Greedy, the built-in engine ignores top-k and top-p; so does vLLM's
	// sampling, but not its processed logprobs in a batch with sampled
	// requests, so they are sent off.
	if s.TopK > 0 && s.Temperature > 0 {
		b.TopK = s.TopK
	}
	if s.TopP > 0 && s.TopP < 1 && s.Temperature > 0 { // the built-in engine's test: any other value is off
		b.TopP = s.TopP
	}
	if r.Seed != nil {
		if *r.Seed > math.MaxInt64 {
			return completionRequest{}, fmt.Errorf("seed %d does not fit vLLM's int64", *r.Seed)
		}
		seed := int64(*r.Seed)
		b.Seed = &seed
	}
	if r.PromptLogprobs {
		zero := 0
		b.PromptLogprobs = &zero
	}
	return b, nil
}

// completionResponse is the part of vLLM's answer read.
type completionResponse struct {
	Choices []struct {
		TokenIDs *[]int64 `json:"token_ids"`
		Logprobs *struct {
			TokenLogprobs []*float64 `json:"token_logprobs"`
			Tokens        []string   `json:"tokens"`
		} `json:"logprobs"`
		PromptLogprobs []map[string]struct {
			Logprob *float64 `json:"logprob"`
		} `json:"prompt_logprobs"`
		FinishReason *string         `json:"finish_reason"`
		StopReason   json.RawMessage `json:"stop_reason"`
	} `json:"choices"`
}

// Generate samples one completion of r.Prompt. Every failure is an error
// naming the server and what failed: unreachable, refused, timed out, an
// error status with vLLM's message, or an answer malformed or missing a
// field or of inconsistent lengths.
func (c *Client) Generate(ctx context.Context, r Request) (Completion, error) {
	req, err := c.body(r)
	if err != nil {
		return Completion{}, fmt.Errorf("vllm: generate: %w", err)
	}
	raw, err := c.post(ctx, "/v1/completions", req)
	if err != nil {
		return Completion{}, err
	}
	comp, err := parseCompletion(raw, r)
	if err != nil {
		return Completion{}, fmt.Errorf("vllm: POST %s/v1/completions: %w", c.base, err)
	}
	return comp, nil
}

// parseCompletion reads vLLM's answer to r and checks it.
func parseCompletion(raw []byte, r Request) (Completion, error) {
	var resp completionResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return Completion{}, fmt.Errorf("malformed response: %v", err)
	}
	if len(resp.Choices) != 1 {
		return Completion{}, fmt.Errorf("%d choices, want 1", len(resp.Choices))
	}
	ch := resp.Choices[0]
	if ch.TokenIDs == nil {
		return Completion{}, errors.New("response has no choices[0].token_ids")
	}
	if ch.Logprobs == nil {
		return Completion{}, errors.New("response has no choices[0].logprobs")
	}
	if ch.FinishReason == nil {
		return Completion{}, errors.New("response has no choices[0].finish_reason")
	}
	ids, lp := *ch.TokenIDs, ch.Logprobs
	if len(ids) == 0 || len(ids) > r.MaxTokens {
		return Completion{}, fmt.Errorf("%d tokens sampled, want 1 to max tokens %d", len(ids), r.MaxTokens)
	}
	if len(lp.TokenLogprobs) != len(ids) || len(lp.Tokens) != len(ids) {
		return Completion{}, fmt.Errorf("%d token ids but %d logprobs and %d logprob tokens", len(ids), len(lp.TokenLogprobs), len(lp.Tokens))
	}
	out := Completion{Tokens: ids, Logprobs: make([]float32, len(ids)), FinishReason: *ch.FinishReason, StopID: -1}
	for i, id := range ids {
		if want := "token_id:" + strconv.FormatInt(id, 10); lp.Tokens[i] != want {
			return Completion{}, fmt.Errorf("token %d is id %d but its logprob is of %q", i, id, lp.Tokens[i])
		}
		if lp.TokenLogprobs[i] == nil {
			return Completion{}, fmt.Errorf("token %d (id %d) has no logprob", i, id)
		}
		out.Logprobs[i] = float32(*lp.TokenLogprobs[i])
	}
	switch out.FinishReason {
	case "stop":
		var stop int64
		if err := json.Unmarshal(ch.StopReason, &stop); err != nil {
			return Completion{}, fmt.Errorf("finish reason stop with stop_reason %s, want a stop id", ch.StopReason)
		}
		if ids[len(ids)-1] != stop {
			return Completion{}, fmt.Errorf("stopped by id %d, but the last token is %d", stop, ids[len(ids)-1])
		}
		out.StopID = stop
	case "length":
	default:
		return Completion{}, fmt.Errorf("finish reason %q, want stop or length", out.FinishReason)
	}
	if r.PromptLogprobs {
		p, err := promptLogprobs(ch.PromptLogprobs, r.Prompt)
		if err != nil {
			return Completion{}, err
		}
		out.PromptLogprobs = p
	}
	return out, nil
}

// promptLogprobs reads prompt_logprobs: null for the first token, then for
// each token a map from token ids to {logprob} holding that token.
func promptLogprobs(entries []map[string]struct {
	Logprob *float64 `json:"logprob"`
}, prompt []int64) ([]float32, error) {
	if len(entries) != len(prompt) {
		return nil, fmt.Errorf("%d prompt logprobs for %d prompt tokens", len(entries), len(prompt))
	}
	out := make([]float32, len(prompt)-1)
	for i := 1; i < len(prompt); i++ {
		e, ok := entries[i][strconv.FormatInt(prompt[i], 10)]
		if !ok || e.Logprob == nil {
			return nil, fmt.Errorf("prompt logprob %d has no entry for its token %d", i, prompt[i])
		}
		out[i-1] = float32(*e.Logprob)
	}
	return out, nil
}

// post sends body as JSON to path and returns the answer of a 200.
func (c *Client) post(ctx context.Context, path string, body any) ([]byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("vllm: POST %s: %w", path, err)
		}
		rd = bytes.NewReader(b)
	}
	return c.do(ctx, http.MethodPost, path, rd)
}

// do sends one request and returns the answer of a 200; anything else is
// an error naming the server, the route and what failed.
func (c *Client) do(ctx context.Context, method, path string, body io.Reader) ([]byte, error) {
	where := fmt.Sprintf("vllm: %s %s%s", method, c.base, path)
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", where, transportError(ctx, err, c.timeout))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, fmt.Errorf("%s: reading the response: %s", where, transportError(ctx, err, c.timeout))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %s", where, resp.Status, errorMessage(raw))
	}
	return raw, nil
}

// transportError says why a request got no answer.
func transportError(ctx context.Context, err error, timeout time.Duration) string {
	var op *net.OpError
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) && timeout > 0:
		return fmt.Sprintf("no answer within the request timeout %v", timeout)
	case ctx.Err() != nil:
		return ctx.Err().Error()
	case errors.As(err, &op) && op.Op == "dial":
		return fmt.Sprintf("cannot connect (%v): is the server running?", op.Err)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Sprintf("the server closed the connection (%v): did it exit?", err)
	}
	return err.Error()
}

// errorMessage is vLLM's message in an error answer ({"error": {"message":
// ...}}, or FastAPI's {"detail": ...}), or the start of the body.
func errorMessage(raw []byte) string {
	var e struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(raw, &e) == nil {
		if e.Error != nil && e.Error.Message != "" {
			return e.Error.Message
		}
		if len(e.Detail) > 0 {
			return string(e.Detail)
		}
	}
	const n = 500
	s := strings.TrimSpace(string(raw))
	if len(s) > n {
		s = s[:n] + "..."
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}
