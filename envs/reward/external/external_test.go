package external

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
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
	var got envs.Episode
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
	want := envs.Episode{TaskID: "q1", Question: "Capital of France?", Gold: []string{"Paris"}, Answer: "Paris", Stop: "answer"}
	if got.TaskID != want.TaskID || got.Question != want.Question || got.Answer != want.Answer || got.Stop != want.Stop ||
		len(got.Turns) != 2 || got.Turns[0].Calls[0].Tool != "echo" || got.Turns[0].Calls[0].Args != `{"text":"x"}` ||
		!got.Turns[0].Calls[0].OK || got.Turns[1].Text != "<answer>Paris</answer>" {
		t.Fatalf("episode %+v", got)
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
