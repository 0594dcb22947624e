package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/reward"
	"github.com/agentrl/agentrl/trainer/config"
)

// The tools of a config, in order: registered (calculator), the MCP
// server's (filtered and prefixed), the HTTP tools; names must not clash.
func TestBuildToolsJoinsAllKinds(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("the MCP test server needs /usr/bin/python3")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"content":"pong"}`))
	}))
	defer srv.Close()
	cfg := config.Default()
	for _, s := range []string{"tools.enabled=[calculator]",
		"tools.mcp=[{name: t, command: /usr/bin/python3, args: [../../envs/tools/mcp/testdata/server.py], tools: [echo, add], prefix: 'x_'}]",
		"tools.http=[{name: ping, url: '" + srv.URL + "', description: Ping.}]"} {
		if err := cfg.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ts, err := buildTools(context.Background(), cfg.Tools, "")
	if err != nil {
		t.Fatal(err)
	}
	defer ts.Close()
	var names []string
	for _, tl := range ts.Tools {
		names = append(names, tl.Name())
	}
	if got := strings.Join(names, ","); got != "calculator,x_echo,x_add,ping" {
		t.Fatalf("tools %s", got)
	}
	ecfg := envs.DefaultEnvConfig()
	ecfg.ToolTimeout = 5 * time.Second
	env, err := envs.NewToolEnv(envs.Task{ID: "t"}, ts.Tools, ecfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.Step(context.Background(), envs.Action{Text: `<tool_call>{"name":"x_add","arguments":{"a":1,"b":2}}</tool_call>` +
		`<tool_call>{"name":"ping","arguments":{}}</tool_call><tool_call>{"name":"calculator","arguments":{"expression":"2*3"}}</tool_call>`})
	if err != nil || strings.Join(res.Responses, "|") != "3|pong|6" {
		t.Fatalf("%+v %v", res, err)
	}

	// Two tools called the same: refused, and the started server stopped.
	cfg.Set("tools.http=[{name: x_echo, url: 'http://h/'}]")
	if _, err := buildTools(context.Background(), cfg.Tools, ""); err == nil || !strings.Contains(err.Error(), `two tools are called "x_echo"`) {
		t.Fatalf("clash: %v", err)
	}
}

func TestExternalScorer(t *testing.T) {
	if s, err := externalScorer(config.Default().Env.Rewards.External); s != nil || err != nil {
		t.Fatalf("a scorer without configuration: %v %v", s, err)
	}
	s, err := externalScorer(reward.External{Command: []string{"/bin/sh", "-c", `cat >/dev/null; echo '{"reward": 0.5}'`}, MaxOutputMB: 1})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := s.Score(context.Background(), envs.ScoredEpisode{})
	if err != nil || r != 0.5 {
		t.Fatalf("%v %v", r, err)
	}
	// A program that is not there is refused at start-up, naming the key.
	_, err = externalScorer(reward.External{Command: []string{"/nonexistent/score.py"}, MaxOutputMB: 1})
	if err == nil || !strings.Contains(err.Error(), `env.rewards.external.command: reward program "/nonexistent/score.py" cannot be run`) {
		t.Fatalf("missing program: %v", err)
	}
}

// tools.mcp[].max_message_mb reaches the server: a tools/list answer of
// 2 MiB is refused under a 1 MiB cap.
func TestBuildToolsCapsMCPMessages(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.NewDecoder(r.Body).Decode(&m)
		w.Header().Set("Content-Type", "application/json")
		switch m.Method {
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18"}}`, m.ID)
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"big","description":"%s"}]}}`, m.ID, strings.Repeat("x", 2<<20))
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	cfg := config.Default()
	for _, s := range []string{"tools.enabled=[]", "tools.mcp=[{name: big, url: '" + srv.URL + "', max_message_mb: 1}]"} {
		if err := cfg.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	_, err := buildTools(context.Background(), cfg.Tools, "")
	if err == nil || !strings.Contains(err.Error(), "the response is over 1048576 bytes (tools.mcp[].max_message_mb)") {
		t.Fatalf("%v", err)
	}
	cfg.Tools.MCP[0].MaxMessageMB = 3
	ts, err := buildTools(context.Background(), cfg.Tools, "")
	if err != nil {
		t.Fatal(err)
	}
	ts.Close()
}
