// Package external computes rewards outside the trainer: a command or an
// HTTP endpoint receives the finished episode as JSON (envs.Episode:
// task_id, dataset, question, gold, answer, stop, turns with their tool
// calls) and answers {"reward": x, "components": {"name": y, ...}}.
package external

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os/exec"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// answer is what a scorer returns.
type answer struct {
	Reward     *float64           `json:"reward"`
	Components map[string]float64 `json:"components"`
}

// decode reads an answer; the reward must be a finite number.
func decode(b []byte) (float64, map[string]float64, error) {
	var a answer
	if err := json.Unmarshal(b, &a); err != nil || a.Reward == nil {
		return 0, nil, fmt.Errorf(`want {"reward": number, "components": {...}}, got %s`, envs.Excerpt(strings.TrimSpace(string(b)), 200))
	}
	if math.IsNaN(*a.Reward) || math.IsInf(*a.Reward, 0) {
		return 0, nil, fmt.Errorf("reward %v is not finite", *a.Reward)
	}
	return *a.Reward, a.Components, nil
}

// Command runs a program per episode: the episode's JSON on its stdin,
// the answer on its stdout.
type Command struct{ Argv []string }

// String names the scorer by its program, as its errors do.
func (c Command) String() string { return c.Argv[0] }

// Score runs the command; a non-zero exit is an error quoting its stderr.
func (c Command) Score(ctx context.Context, ep envs.Episode) (float64, map[string]float64, error) {
	in, err := json.Marshal(ep)
	if err != nil {
		return 0, nil, err
	}
	cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return 0, nil, fmt.Errorf("%s: %w", c.Argv[0], ctx.Err())
		}
		return 0, nil, fmt.Errorf("%s: %v: %s", c.Argv[0], err, envs.Excerpt(strings.TrimSpace(stderr.String()), 300))
	}
	r, comps, err := decode(stdout.Bytes())
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", c.Argv[0], err)
	}
	return r, comps, nil
}

// HTTP POSTs each episode to URL and reads the answer from the 2xx
// response.
type HTTP struct {
	URL    string
	Client *http.Client // nil = http.DefaultClient
}

// String names the scorer as its errors do: "POST" and the URL.
func (h HTTP) String() string { return "POST " + h.URL }

// Score posts the episode.
func (h HTTP) Score(ctx context.Context, ep envs.Episode) (float64, map[string]float64, error) {
	in, err := json.Marshal(ep)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL, bytes.NewReader(in))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	client := h.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, nil, fmt.Errorf("POST %s: %w", h.URL, err)
	}
	if resp.StatusCode/100 != 2 {
		return 0, nil, fmt.Errorf("POST %s: %s: %s", h.URL, resp.Status, envs.Excerpt(strings.TrimSpace(string(b)), 200))
	}
	r, comps, err := decode(b)
	if err != nil {
		return 0, nil, fmt.Errorf("POST %s: %w", h.URL, err)
	}
	return r, comps, nil
}
