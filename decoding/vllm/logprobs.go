package vllm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/decoding"
)

// The values of vLLM's --logprobs-mode (set per server, at its start)
// whose logprobs agentrl can record. RawLogprobs, vLLM's default, is log
// softmax of the model's logits before temperature, top-k and top-p;
// ProcessedLogprobs is log softmax after them (with top-k or top-p, of the
// kept tokens renormalised). Its other two modes report logits, which are
// not logprobs.
const (
	RawLogprobs       = "raw_logprobs"
	ProcessedLogprobs = "processed_logprobs"
)

// LogprobsModes are the --logprobs-mode values under which vLLM reports
// for s the log-probability the built-in engine records, log
// softmax(logits/Temperature) of the chosen token, untruncated
// (Temperature 1 when greedy): for greedy sampling and for temperature 1
// without top-k and top-p both; for temperature 1 with top-k or top-p
// RawLogprobs (ProcessedLogprobs renormalises over the kept tokens); for
// another temperature without top-k and top-p ProcessedLogprobs (raw ones
// are taken before the temperature); for another temperature with top-k or
// top-p none, since vLLM reports no logprob after the temperature and
// before the truncation.
func LogprobsModes(s decoding.Sampling) []string {
	truncated := s.TopK > 0 || (s.TopP > 0 && s.TopP < 1)
	switch {
	case s.Temperature <= 0 || (s.Temperature == 1 && !truncated):
		return []string{RawLogprobs, ProcessedLogprobs}
	case s.Temperature == 1:
		return []string{RawLogprobs}
	case !truncated:
		return []string{ProcessedLogprobs}
	}
	return nil
}

// CheckLogprobsMode says why a server started with --logprobs-mode mode
// does not report the built-in engine's logprob for s, or nil when it
// does (LogprobsModes).
func CheckLogprobsMode(mode string, s decoding.Sampling) error {
	ok := LogprobsModes(s)
	switch {
	case len(ok) == 0:
		return fmt.Errorf("temperature %v with top-k %d and top-p %v: vLLM reports logprobs before the temperature or after the truncation, "+
			"never the built-in engine's (after the temperature, untruncated)", s.Temperature, s.TopK, s.TopP)
	case !slices.Contains(ok, mode):
		return fmt.Errorf("the server's --logprobs-mode is %s, but temperature %v, top-k %d, top-p %v needs --logprobs-mode %s "+
			"for the built-in engine's logprobs (log softmax(logits/temperature), untruncated)", mode, s.Temperature, s.TopK, s.TopP, strings.Join(ok, " or "))
	}
	return nil
}

// LogprobsMode is the server's --logprobs-mode, read from GET
// /server_info (served with VLLM_SERVER_DEV_MODE=1, like the weight
// routes).
func (c *Client) LogprobsMode(ctx context.Context) (string, error) {
	raw, err := c.do(ctx, "GET", "/server_info?config_format=json", nil)
	if err != nil {
		return "", err
	}
	var r struct {
		Config struct {
			Model struct {
				LogprobsMode string `json:"logprobs_mode"`
			} `json:"model_config"`
		} `json:"vllm_config"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", fmt.Errorf("vllm: GET %s/server_info: malformed response: %v", c.base, err)
	}
	if r.Config.Model.LogprobsMode == "" {
		return "", fmt.Errorf("vllm: GET %s/server_info: no vllm_config.model_config.logprobs_mode", c.base)
	}
	return r.Config.Model.LogprobsMode, nil
}
