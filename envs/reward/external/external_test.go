package external

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs"
)

// scorerScript answers with reward 0.5 plus 0.5 per tool call that
// succeeded, and echoes what it read as components.
const scorerScript = `
import json, sys
ep = json.load(sys.stdin)
calls = [c for t in ep["turns"] for c in t["calls"]]
ok = sum(1 for c in calls if c["ok"])
print(json.dumps({"reward": 0.5 + 0.5 * ok, "components": {
    "calls": len(calls), "ok": ok, "answered": int(ep["answer"] == ep["gold"][0]), "turns": len(ep["turns"])}}))
`

// echoTool answers with its text.
type echoTool struct{}

func (echoTool) Name() string        { return "echo" }
func (echoTool) Description() string { return "echo" }
func (echoTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)
}
func (echoTool) Call(_ context.Context, a json.RawMessage) (envs.Result, error) {
	return envs.Result{Content: string(a), OK: true}, nil
}

// play runs a two-turn episode (a tool call, then the answer "Paris")
// under the scorer and returns its outcome.
func play(t *testing.T, s envs.Scorer, onErr func(error)) (float64, map[string]float64) {
	t.Helper()
	cfg := envs.DefaultEnvConfig()
	cfg.External = envs.ExternalConfig{Scorer: s, OnError: onErr}
	cfg.Rewards.External.Weight, cfg.Rewards.External.Timeout = 2, 5*time.Second
	env, err := envs.NewToolEnv(envs.Task{ID: "q1", Question: "Capital of France?", Answers: []string{"Paris"}},
		[]envs.Tool{echoTool{}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{`<tool_call>{"name":"echo","arguments":{"text":"x"}}</tool_call>`, `<answer>Paris</answer>`} {
		if _, err := env.Step(context.Background(), envs.Action{Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	return env.Outcome()
}

func TestCommandReward(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("needs /usr/bin/python3")
	}
	total, c := play(t, Command{Argv: []string{"/usr/bin/python3", "-c", scorerScript}}, nil)
	// EM 1 + format 0.1 (the default weights) + 2 x (0.5 + 0.5 x 1 call ok).
	if c["external"] != 1 || c["external.calls"] != 1 || c["external.ok"] != 1 || c["external.answered"] != 1 ||
		c["external.turns"] != 2 || total != 1+0.1+2*1 || c["total"] != total {
		t.Fatalf("total %v, components %v", total, c)
	}
}

func TestFailingCommandCountsZero(t *testing.T) {
	var reported error
	total, c := play(t, Command{Argv: []string{"/bin/sh", "-c", "echo broken >&2; exit 2"}}, func(err error) { reported = err })
	if total != 1.1 || c["external"] != 0 || c["external_failed"] != 1 {
		t.Fatalf("total %v, components %v", total, c)
	}
	if reported == nil || !strings.Contains(reported.Error(), "task q1: external reward: /bin/sh: exit status 2: broken") {
		t.Fatalf("reported %v", reported)
	}
	_, c = play(t, Command{Argv: []string{"/bin/sh", "-c", `echo '{"reward": "high"}'`}}, nil)
	if c["external_failed"] != 1 {
		t.Fatalf("a malformed answer: %v", c)
	}
}

func TestHTTPReward(t *testing.T) {
	var got envs.ScoredEpisode
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &got)
		w.Write([]byte(`{"reward": -0.25, "components": {"style": 3}}`))
	}))
	defer srv.Close()
	total, c := play(t, HTTP{URL: srv.URL}, nil)
	if math.Abs(total-(1.1-0.5)) > 1e-12 || c["external"] != -0.25 || c["external.style"] != 3 {
		t.Fatalf("total %v, components %v", total, c)
	}
	want := envs.ScoredEpisode{TaskID: "q1", Question: "Capital of France?", Gold: []string{"Paris"}, Answer: "Paris", Stop: "answer"}
	if got.TaskID != want.TaskID || got.Question != want.Question || got.Answer != want.Answer || got.Stop != want.Stop ||
		len(got.Turns) != 2 || got.Turns[0].Calls[0].Name != "echo" || got.Turns[0].Calls[0].Args != `{"text":"x"}` ||
		!got.Turns[0].Calls[0].OK || got.Turns[1].Text != "<answer>Paris</answer>" {
		t.Fatalf("episode %+v", got)
	}
}

// The episode's JSON keeps the names scorers read: the episode's "stop"
// and "turns", a turn's "text" and "calls" ([] when it made none), a
// call's "tool", "args", "result" and "ok", and a call's "latency_ms".
func TestEpisodeJSONFieldNames(t *testing.T) {
	var ep map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &ep)
		w.Write([]byte(`{"reward": 0}`))
	}))
	defer srv.Close()
	play(t, HTTP{URL: srv.URL}, nil)
	turns, _ := ep["turns"].([]any)
	if ep["stop"] != "answer" || len(turns) != 2 {
		t.Fatalf("episode %v", ep)
	}
	first, _ := turns[0].(map[string]any)
	second, _ := turns[1].(map[string]any)
	calls, _ := first["calls"].([]any)
	none, isList := second["calls"].([]any)
	if len(calls) != 1 || !isList || len(none) != 0 || second["text"] != "<answer>Paris</answer>" {
		t.Fatalf("turns %v; want one call, then the answer with \"calls\": []", turns)
	}
	call, _ := calls[0].(map[string]any)
	latency, isNumber := call["latency_ms"].(float64)
	if call["tool"] != "echo" || call["args"] != `{"text":"x"}` || call["result"] != `{"text":"x"}` || call["ok"] != true ||
		!isNumber || latency < 0 {
		t.Errorf("call %v", call)
	}
}

func TestHungHTTPRewardTimesOut(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body) // after the body, the server notices the client leave
		<-r.Context().Done()
	}))
	defer srv.Close()
	cfg := envs.DefaultEnvConfig()
	cfg.External = envs.ExternalConfig{Scorer: HTTP{URL: srv.URL}}
	cfg.Rewards.External.Weight, cfg.Rewards.External.Timeout = 1, 100*time.Millisecond
	env, _ := envs.NewToolEnv(envs.Task{ID: "q"}, nil, cfg)
	env.Step(context.Background(), envs.Action{Text: "<answer>x</answer>"})
	start := time.Now()
	_, c := env.Outcome()
	if c["external_failed"] != 1 || time.Since(start) > 2*time.Second {
		t.Fatalf("%v after %s", c, time.Since(start))
	}
}

// A reward that is finite but not once weighted (1e308 x 2), from a
// command or a service, is a failed scoring, counted 0 and reported naming
// the scorer; the total stays finite, so the run goes on.
func TestOverflowingWeightedRewardIsAFailure(t *testing.T) {
	const huge = `{"reward": 1e308, "components": {"x": 1}}`
	script := filepath.Join(t.TempDir(), "huge.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho '"+huge+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(huge)) }))
	defer srv.Close()
	for name, s := range map[string]envs.Scorer{script: Command{Argv: []string{script}}, "POST " + srv.URL: HTTP{URL: srv.URL}} {
		var reported error
		total, c := play(t, s, func(err error) { reported = err })
		if total != 1.1 || c["total"] != total || c["external"] != 0 || c["external_failed"] != 1 {
			t.Fatalf("%s: total %v, components %v", name, total, c)
		}
		if reported == nil || !strings.Contains(reported.Error(), "task q1: external reward: "+name+": reward 1e+308 weighted by 2 is +Inf") {
			t.Fatalf("%s: reported %v", name, reported)
		}
	}
}

// script writes an executable shell script into a temporary folder and
// returns its path.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scorer.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// scoreOnce scores a one-turn episode with s under timeout and returns
// the components and the error reported; it fails the test when scoring
// does not end within 10 s.
func scoreOnce(t *testing.T, s envs.Scorer, timeout time.Duration) (map[string]float64, error) {
	t.Helper()
	var reported error
	cfg := envs.DefaultEnvConfig()
	cfg.External = envs.ExternalConfig{Scorer: s, OnError: func(err error) { reported = err }}
	cfg.Rewards.External.Weight, cfg.Rewards.External.Timeout = 1, timeout
	env, err := envs.NewToolEnv(envs.Task{ID: "q"}, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	env.Step(context.Background(), envs.Action{Text: "<answer>x</answer>"})
	done := make(chan map[string]float64, 1)
	go func() {
		_, c := env.Outcome()
		done <- c
	}()
	select {
	case c := <-done:
		return c, reported
	case <-time.After(10 * time.Second):
		t.Fatal("the scoring outlived its timeout")
		return nil, nil
	}
}

// gone reports whether process pid has ended (a zombie counts as ended),
// waiting up to 2 s for it.
func gone(pid int) bool {
	for range 40 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		if _, after, ok := strings.Cut(string(b), ") "); ok && strings.HasPrefix(after, "Z") {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// readPid reads the pid a script wrote.
func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// A scorer that leaves a child holding its stdout open: the scoring ends
// within the timeout (plus a short grace), counts as failed, and the
// child is killed, whether the scorer itself exited, is still waiting
// for the child, or the child left the process group.
func TestCommandChildrenAreBoundedByTheTimeout(t *testing.T) {
	cases := []struct {
		name, body, want string
		killed           bool
	}{
		{"exited", `cat >/dev/null; sleep 30 & echo $! > "$0.pid"; echo '{"reward": 1}'`, "kept its output open", true},
		{"waiting", `cat >/dev/null; sleep 30 & echo $! > "$0.pid"; echo '{"reward": 1}'; wait`, "deadline exceeded", true},
		{"setsid", `cat >/dev/null; setsid sleep 30 & echo $! > "$0.pid"; echo '{"reward": 1}'`, "kept its output open", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := script(t, c.body)
			comps, err := scoreOnce(t, Command{Argv: []string{path}}, 300*time.Millisecond)
			pid := readPid(t, path+".pid")
			defer syscall.Kill(pid, syscall.SIGKILL)
			if comps["external_failed"] != 1 || comps["external"] != 0 {
				t.Fatalf("components %v", comps)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("reported %v, want %q", err, c.want)
			}
			if c.killed && !gone(pid) {
				t.Fatalf("the scorer's child %d outlived the scoring", pid)
			}
		})
	}
}

// A scorer flooding stdout or stderr: the answer is refused past
// MaxOutput, saying so, and neither flood is held in memory.
func TestCommandOutputIsCapped(t *testing.T) {
	const limit, flood = 64 << 10, 64 << 20
	for _, c := range []struct{ body, want string }{
		{fmt.Sprintf("head -c %d /dev/zero", flood), "the answer on stdout is over 65536 bytes (env.rewards.external.max_output_mb)"},
		{fmt.Sprintf("head -c %d /dev/zero >&2; exit 1", flood), "exit status 1"},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _, err := Command{Argv: []string{script(t, c.body)}, MaxOutput: limit}.Score(context.Background(), envs.ScoredEpisode{})
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v, want %q", c.body, err, c.want)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > flood/8 {
			t.Fatalf("%s: %d bytes allocated for a %d-byte flood", c.body, grew, flood)
		}
	}
}

// An HTTP answer over MaxOutput is refused, saying so.
func TestHTTPAnswerIsCapped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"reward": 1, "pad": "` + strings.Repeat("x", 2000) + `"}`))
	}))
	defer srv.Close()
	_, _, err := HTTP{URL: srv.URL, MaxOutput: 1000}.Score(context.Background(), envs.ScoredEpisode{})
	if err == nil || !strings.Contains(err.Error(), "the answer is over 1000 bytes (env.rewards.external.max_output_mb)") {
		t.Fatalf("%v", err)
	}
}

// CheckProgram accepts an executable found at its path or on PATH, and
// names a program that is missing, not executable or a folder.
func TestCheckProgram(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.sh")
	os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644)
	for _, ok := range []string{"/bin/sh", "sh", script(t, "")} {
		if err := CheckProgram(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{filepath.Join(dir, "missing"), plain, dir, "no-such-scorer-anywhere"} {
		if err := CheckProgram(bad); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("reward program %q cannot be run", bad)) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// A scorer's stderr and component names reach the logs: an ANSI escape
// in stderr is escaped, and a component name with one is refused.
func TestScorerTextIsEscaped(t *testing.T) {
	_, _, err := Command{Argv: []string{script(t, `printf '\033[2J\033[31mbroken' >&2; exit 2`)}}.Score(context.Background(), envs.ScoredEpisode{})
	if err == nil || !strings.HasSuffix(err.Error(), `exit status 2: \x1b[2J\x1b[31mbroken`) {
		t.Fatalf("%q", err)
	}
	_, _, err = Command{Argv: []string{script(t, `echo '{"reward": 1, "components": {"\u001b[31mred": 1}}'`)}}.Score(context.Background(), envs.ScoredEpisode{})
	if err == nil || !strings.Contains(err.Error(), `component name "\x1b[31mred" has control characters`) {
		t.Fatalf("%q", err)
	}
}
