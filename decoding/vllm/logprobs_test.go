package vllm

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/decoding"
)

// Which --logprobs-mode reports the built-in engine's logprob, log
// softmax(logits/T) untruncated: raw ones are before the temperature,
// processed ones after it and after top-k and top-p (renormalised), so
// temperature 1 takes raw ones with any filter, another temperature
// processed ones without filters, and another temperature with a filter
// none; greedy takes either.
func TestLogprobsModes(t *testing.T) {
	both := []string{RawLogprobs, ProcessedLogprobs}
	for _, tc := range []struct {
		name string
		s    decoding.Sampling
		want []string
	}{
		{"greedy", decoding.Sampling{}, both},
		{"greedy with filters", decoding.Sampling{TopK: 5, TopP: 0.9}, both},
		{"temperature 1", decoding.Sampling{Temperature: 1}, both},
		{"temperature 1, filters off", decoding.Sampling{Temperature: 1, TopK: -1, TopP: 1.5}, both},
		{"temperature 1, top-k", decoding.Sampling{Temperature: 1, TopK: 20}, []string{RawLogprobs}},
		{"temperature 1, top-p", decoding.Sampling{Temperature: 1, TopP: 0.9}, []string{RawLogprobs}},
		{"temperature 0.7", decoding.Sampling{Temperature: 0.7, TopP: 1}, []string{ProcessedLogprobs}},
		{"temperature 1.3", decoding.Sampling{Temperature: 1.3}, []string{ProcessedLogprobs}},
		{"temperature 0.7, top-k", decoding.Sampling{Temperature: 0.7, TopK: 20}, nil},
		{"temperature 0.7, top-p", decoding.Sampling{Temperature: 0.7, TopP: 0.95}, nil},
	} {
		if got := LogprobsModes(tc.s); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		for _, mode := range []string{RawLogprobs, ProcessedLogprobs, "raw_logits", "processed_logits"} {
			err := CheckLogprobsMode(mode, tc.s)
			if ok := slices.Contains(tc.want, mode); ok != (err == nil) {
				t.Errorf("%s, --logprobs-mode %s: %v, want ok %v", tc.name, mode, err, ok)
			}
			if err != nil && len(tc.want) > 0 && !strings.Contains(err.Error(), "needs --logprobs-mode "+strings.Join(tc.want, " or ")) {
				t.Errorf("%s, --logprobs-mode %s: %q does not say which mode it needs", tc.name, mode, err)
			}
		}
	}
}

// The server's mode is read from GET /server_info?config_format=json;
// an answer without it is an error naming the route.
func TestLogprobsMode(t *testing.T) {
	for _, tc := range []struct{ name, body, want, err string }{
		{"processed", `{"vllm_config":{"model_config":{"logprobs_mode":"processed_logprobs","dtype":"torch.float32"}},"vllm_env":{}}`, ProcessedLogprobs, ""},
		{"missing", `{"vllm_config":{"model_config":{}}}`, "", "no vllm_config.model_config.logprobs_mode"},
		{"malformed", `{"vllm_config":`, "", "malformed response"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodGet || r.URL.Path != "/server_info" || r.URL.Query().Get("config_format") != "json" {
				t.Errorf("request %s %s, want GET /server_info?config_format=json", r.Method, r.URL)
			}
			io.WriteString(w, tc.body)
		}))
		c, err := NewClient(srv.URL, 0)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.LogprobsMode(context.Background())
		srv.Close()
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) || err != nil && !strings.Contains(err.Error(), "/server_info") {
			t.Errorf("%s: %q, %v; want %q, error %q", tc.name, got, err, tc.want, tc.err)
		}
	}
}
