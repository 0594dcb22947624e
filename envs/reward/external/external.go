// Package external computes rewards outside the trainer: a command or an
// HTTP endpoint receives the finished episode as JSON (envs.ScoredEpisode:
// task_id, dataset, question, gold, answer, stop, turns with their tool
// calls) and answers {"reward": x, "components": {"name": y, ...}}.
package external

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/internal/sameorigin"
)

// answer is what a scorer returns.
type answer struct {
	Reward     *float64           `json:"reward"`
	Components map[string]float64 `json:"components"`
}

// decode reads an answer; the reward must be a finite number, and the
// component names (which reach the logs) free of control characters.
func decode(b []byte) (float64, map[string]float64, error) {
	var a answer
	if err := json.Unmarshal(b, &a); err != nil || a.Reward == nil {
		return 0, nil, fmt.Errorf(`want {"reward": number, "components": {...}}, got %s`, envs.Excerpt(strings.TrimSpace(string(b)), 200))
	}
	if math.IsNaN(*a.Reward) || math.IsInf(*a.Reward, 0) {
		return 0, nil, fmt.Errorf("reward %v is not finite", *a.Reward)
	}
	for k := range a.Components {
		if strings.ContainsFunc(k, unicode.IsControl) {
			return 0, nil, fmt.Errorf("component name %q has control characters", k)
		}
	}
	return *a.Reward, a.Components, nil
}

// DefaultMaxOutput bounds a scorer's answer (a command's stdout, an HTTP
// body) when none is set: 1 MiB.
const DefaultMaxOutput = 1 << 20

// stderrKept is how much of a command's stderr is kept for its error.
const stderrKept = 4 << 10

// outputGrace is how long Score waits for the output of a command that
// has exited (or was killed) to end: a process it started that keeps the
// output open is not waited for longer.
const outputGrace = 200 * time.Millisecond

// CheckProgram reports whether name can be run as a command: a file found
// on PATH (a name without a slash) or at its path, and executable.
func CheckProgram(name string) error {
	if _, err := exec.LookPath(name); err != nil {
		return fmt.Errorf("reward program %q cannot be run: %w", name, err)
	}
	return nil
}

// Command runs a program per episode: the episode's JSON on its stdin,
// the answer on its stdout. The program runs in a process group of its
// own, and the scoring's context bounds everything in it: at its end the
// group is killed, and output held open by a process the program started
// is not waited for.
type Command struct {
	Argv      []string
	MaxOutput int // bytes of stdout accepted (0 = DefaultMaxOutput)
}

// String names the scorer by its program, as its errors do.
func (c Command) String() string { return c.Argv[0] }

// Score runs the command; a non-zero exit is an error quoting its stderr,
// and so is stdout over MaxOutput or output still open after the program
// exited.
func (c Command) Score(ctx context.Context, ep envs.ScoredEpisode) (float64, map[string]float64, error) {
	in, err := json.Marshal(ep)
	if err != nil {
		return 0, nil, err
	}
	run, stop := context.WithCancel(ctx)
	defer stop()
	limit := c.MaxOutput
	if limit <= 0 {
		limit = DefaultMaxOutput
	}
	stdout, stderr := &capped{max: limit, full: stop}, &capped{max: stderrKept}
	cmd := exec.CommandContext(run, c.Argv[0], c.Argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = outputGrace
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left running goes too; a group already gone is fine
	}
	switch {
	case stdout.over():
		return 0, nil, fmt.Errorf("%s: the answer on stdout is over %d bytes (env.rewards.external.max_output_mb)", c.Argv[0], limit)
	case ctx.Err() != nil:
		return 0, nil, fmt.Errorf("%s: %w", c.Argv[0], ctx.Err())
	case errors.Is(err, exec.ErrWaitDelay):
		return 0, nil, fmt.Errorf("%s exited, but a process it started kept its output open", c.Argv[0])
	case err != nil:
		return 0, nil, fmt.Errorf("%s: %v: %s", c.Argv[0], err, envs.Excerpt(strings.TrimSpace(string(stderr.buf)), 300))
	}
	r, comps, err := decode(stdout.buf)
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %w", c.Argv[0], err)
	}
	return r, comps, nil
}

// capped keeps the first max bytes written to it and drops the rest,
// calling full (if set) once there was more.
type capped struct {
	max  int
	full func()
	buf  []byte
	n    int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	c.n += len(p)
	if c.over() && c.full != nil {
		c.full()
	}
	return len(p), nil
}

// over reports whether more than max bytes were written.
func (c *capped) over() bool { return c.n > c.max }

// HTTP POSTs each episode to URL and reads the answer from the 2xx
// response.
type HTTP struct {
	URL       string
	Client    *http.Client // nil = one that follows redirects within URL's origin only (sameorigin.Client)
	MaxOutput int          // bytes of the response body accepted (0 = DefaultMaxOutput)
}

// sameOrigin posts episodes, which carry the gold answers, only to the
// configured URL's origin, even when redirected.
var sameOrigin = sameorigin.Client()

// String names the scorer as its errors do: "POST" and the URL.
func (h HTTP) String() string { return "POST " + h.URL }

// Score posts the episode.
func (h HTTP) Score(ctx context.Context, ep envs.ScoredEpisode) (float64, map[string]float64, error) {
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
		client = sameOrigin
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	limit := h.MaxOutput
	if limit <= 0 {
		limit = DefaultMaxOutput
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil {
		return 0, nil, fmt.Errorf("POST %s: %w", h.URL, err)
	}
	if resp.StatusCode/100 != 2 {
		return 0, nil, fmt.Errorf("POST %s: %s: %s", h.URL, resp.Status, envs.Excerpt(strings.TrimSpace(string(b)), 200))
	}
	if len(b) > limit {
		return 0, nil, fmt.Errorf("POST %s: the answer is over %d bytes (env.rewards.external.max_output_mb)", h.URL, limit)
	}
	r, comps, err := decode(b)
	if err != nil {
		return 0, nil, fmt.Errorf("POST %s: %w", h.URL, err)
	}
	return r, comps, nil
}
