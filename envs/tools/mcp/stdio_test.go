package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs"
)

// python is the interpreter of the test server (standard library only).
const python = "/usr/bin/python3"

// startTestServer starts testdata/server.py, or skips without Python.
func startTestServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		t.Skipf("the MCP test server needs %s: %v", python, err)
	}
	if cfg.Name == "" {
		cfg.Name = "test"
	}
	cfg.Command, cfg.Args = python, []string{"testdata/server.py"}
	return startServer(t, cfg)
}

// startServer starts a server that is stopped when the test ends.
func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func toolNamed(t *testing.T, s *Server, name string) envs.Tool {
	t.Helper()
	for _, tl := range s.Tools() {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no tool %q", name)
	return nil
}

func call(t *testing.T, tl envs.Tool, args string) (envs.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return tl.Call(ctx, json.RawMessage(args))
}

func TestStdioListsPagesAndCalls(t *testing.T) {
	s := startTestServer(t, Config{})
	var names []string
	for _, tl := range s.Tools() {
		names = append(names, tl.Name())
	}
	// Eight tools served two per page: the cursor was followed to the end.
	if got := strings.Join(names, ","); got != "echo,add,pid,sleep,hang,fail,barrier,exit" {
		t.Fatalf("tools %s", got)
	}
	echo := toolNamed(t, s, "echo")
	if echo.Description() != "Echo the text back." {
		t.Errorf("description %q", echo.Description())
	}
	// pattern and $schema are dropped, the rest kept.
	want := `{"additionalProperties":false,"properties":{"text":{"type":"string"}},"required":["text"],"type":"object"}`
	if string(echo.Parameters()) != want {
		t.Errorf("parameters %s, want %s", echo.Parameters(), want)
	}
	r, err := call(t, echo, `{"text":"héllo\nworld"}`)
	if err != nil || !r.OK || r.Content != "héllo\nworld" {
		t.Fatalf("echo: %+v %v", r, err)
	}
	r, err = call(t, toolNamed(t, s, "add"), `{"a":2,"b":0.5}`)
	if err != nil || r.Content != "2.5" {
		t.Fatalf("add: %+v %v", r, err)
	}
	// isError: an error with the tool's text, the call's fault (not a Failure).
	_, err = call(t, toolNamed(t, s, "fail"), `{}`)
	if err == nil || err.Error() != "it went wrong" || envs.IsFailure(err) {
		t.Fatalf("fail: %v (failure %v)", err, envs.IsFailure(err))
	}
	if n := s.Client().Sessions(); n != 1 {
		t.Errorf("%d sessions, want 1", n)
	}
}

func TestStdioFilterAndPrefix(t *testing.T) {
	s := startTestServer(t, Config{Tools: []string{"add"}, Prefix: "calc_"})
	if len(s.Tools()) != 1 || s.Tools()[0].Name() != "calc_add" {
		t.Fatalf("tools %v", s.Tools())
	}
	r, err := call(t, s.Tools()[0], `{"a":1,"b":2}`)
	if err != nil || r.Content != "3" {
		t.Fatalf("calc_add: %+v %v", r, err)
	}
	if _, err := os.Stat(python); err != nil {
		t.Skip(err)
	}
	_, err = Start(context.Background(), Config{Name: "x", Command: python, Args: []string{"testdata/server.py"}, Tools: []string{"nope"}})
	if err == nil || !strings.Contains(err.Error(), `has no tool "nope"`) {
		t.Fatalf("unknown tool filter: %v", err)
	}
}

// A server killed while a call is in flight: that call fails at once as
// the tool's failure, saying the server exited, and the next call starts
// a new server process.
func TestStdioKilledServerRestarts(t *testing.T) {
	s := startTestServer(t, Config{})
	pidTool := toolNamed(t, s, "pid")
	r, err := call(t, pidTool, `{}`)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(r.Content)
	errc := make(chan error, 1)
	go func() {
		_, err := call(t, toolNamed(t, s, "sleep"), `{"seconds":30}`)
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond) // the sleep call is in flight
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errc:
		if err == nil || !envs.IsFailure(err) || !strings.Contains(err.Error(), "the server exited: signal: killed") {
			t.Fatalf("in-flight call: %v (failure %v)", err, envs.IsFailure(err))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the in-flight call did not fail when its server was killed")
	}
	r, err = call(t, pidTool, `{}`)
	if err != nil {
		t.Fatalf("call after the kill: %v", err)
	}
	if r.Content == strconv.Itoa(pid) {
		t.Fatalf("same pid %d after restart", pid)
	}
	if n := s.Client().Sessions(); n != 2 {
		t.Errorf("%d sessions, want 2", n)
	}
	// A server that exits by itself (status 3) is the same story.
	_, err = call(t, toolNamed(t, s, "exit"), `{}`)
	if err == nil || !envs.IsFailure(err) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("exit: %v", err)
	}
	if _, err := call(t, toolNamed(t, s, "echo"), `{"text":"back"}`); err != nil {
		t.Fatalf("call after exit: %v", err)
	}
}

// A hung call inside a ToolEnv: the step answers with a timeout error
// after ToolTimeout, the episode goes on, and the server (which still
// runs the hung call) answers the next call.
func TestStdioHungCallTimesOutInToolEnv(t *testing.T) {
	s := startTestServer(t, Config{})
	cfg := envs.DefaultEnvConfig()
	cfg.ToolTimeout = 300 * time.Millisecond
	env, err := envs.NewToolEnv(envs.Task{ID: "t", Question: "q", Answers: []string{"a"}}, s.Tools(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.Step(context.Background(), envs.Action{Text: `<tool_call>{"name":"hang","arguments":{}}</tool_call>`})
	if err != nil || res.Done {
		t.Fatalf("step: %+v %v", res, err)
	}
	c := res.Calls[0]
	if c.OK || c.Result != "Error: tool hang timed out after 300ms" || c.LatencyMS < 300 || c.LatencyMS > 2000 {
		t.Fatalf("hung call: %+v", c)
	}
	res, err = env.Step(context.Background(), envs.Action{Text: `<tool_call>{"name":"echo","arguments":{"text":"still here"}}</tool_call>`})
	if err != nil || !res.Calls[0].OK || res.Responses[0] != "still here" {
		t.Fatalf("next step: %+v %v", res, err)
	}
	// Arguments failing the reduced schema never reach the server.
	res, _ = env.Step(context.Background(), envs.Action{Text: `<tool_call>{"name":"echo","arguments":{"text":1}}</tool_call>`})
	if res.Calls[0].OK || !strings.Contains(res.Responses[0], "arguments.text: expected string") {
		t.Fatalf("bad arguments: %+v", res)
	}
}

// Calls from many slots run on the server at the same time: four calls
// that each wait for all four to arrive come back "together".
func TestStdioConcurrentCalls(t *testing.T) {
	s := startTestServer(t, Config{})
	b := toolNamed(t, s, "barrier")
	var wg sync.WaitGroup
	out := make([]string, 4)
	errs := make([]error, 4)
	for i := range out {
		wg.Go(func() {
			r, err := call(t, b, `{"n":4}`)
			out[i], errs[i] = r.Content, err
		})
	}
	wg.Wait()
	for i := range out {
		if errs[i] != nil || out[i] != "together" {
			t.Fatalf("call %d: %q %v", i, out[i], errs[i])
		}
	}
}

func TestStartErrors(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Name: "a"}, "needs a command (stdio) or a url"},
		{Config{Name: "b", Command: "x", URL: "http://y"}, "not both"},
		{Config{Name: "c", Command: "/nonexistent/server"}, "start /nonexistent/server"},
		{Config{Name: "d", URL: "http://127.0.0.1:1/mcp", Headers: []string{"bad"}}, `header "bad"`},
		{Config{Name: "e", Command: "/bin/sh", Args: []string{"-c", "echo not json; exit 1"}, StartTimeout: 2 * time.Second}, "exit status 1"},
	}
	for _, c := range cases {
		_, err := Start(context.Background(), c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.cfg.Name, err, c.want)
		}
	}
}

// A server that started a child keeping its output open (as a wrapper
// such as npx or a shell might): when the server is killed, the call in
// flight still fails and the next one restarts it, and the child is
// killed with it, as it is when the server is closed.
func TestStdioServerChildDoesNotHoldTheSession(t *testing.T) {
	if _, err := os.Stat(python); err != nil {
		t.Skipf("the MCP test server needs %s: %v", python, err)
	}
	s := startServer(t, Config{Name: "wrapped", Command: "/bin/sh",
		Args: []string{"-c", "sleep 987655 & exec " + python + " testdata/server.py"}})
	r, err := call(t, toolNamed(t, s, "pid"), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(r.Content)
	if n := sleepers(); n != 1 {
		t.Fatalf("%d children running, want 1", n)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := call(t, toolNamed(t, s, "sleep"), `{"seconds":30}`)
		errc <- err
	}()
	time.Sleep(200 * time.Millisecond)
	syscall.Kill(pid, syscall.SIGKILL)
	select {
	case err := <-errc:
		if !envs.IsFailure(err) {
			t.Fatalf("in-flight call: %v", err)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the in-flight call did not fail while the server's child held its output")
	}
	if _, err := call(t, toolNamed(t, s, "echo"), `{"text":"back"}`); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	s.Close()
	if n := sleepers(); n != 0 {
		t.Fatalf("%d children outlived their servers", n)
	}
}

// sleepers counts the processes running "sleep 987655".
func sleepers() int {
	n := 0
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		if b, err := os.ReadFile(d); err == nil && string(b) == "sleep\x00987655\x00" {
			n++
		}
	}
	return n
}

// A server that cannot start again after dying: calls fail as the
// server's failure, and within retryAfter of a failed start they fail
// with its error without starting it once more.
func TestStdioFailedRestart(t *testing.T) {
	if _, err := os.Stat(python); err != nil {
		t.Skipf("the MCP test server needs %s: %v", python, err)
	}
	dir := t.TempDir()
	starts := filepath.Join(dir, "starts")
	// Every start is logged; only the first one runs the server.
	script := `echo start >> "$0"; [ "$(wc -l < "$0")" -gt 1 ] && { echo "cannot start twice" >&2; exit 4; }; exec ` + python + ` testdata/server.py`
	s := startServer(t, Config{Name: "once", Command: "/bin/sh", Args: []string{"-c", script, starts}})
	if _, err := call(t, toolNamed(t, s, "exit"), `{}`); !envs.IsFailure(err) {
		t.Fatalf("exit: %v", err)
	}
	for range 3 {
		_, err := call(t, toolNamed(t, s, "echo"), `{"text":"x"}`)
		if !envs.IsFailure(err) || !strings.Contains(err.Error(), "cannot start twice") {
			t.Fatalf("call after a failed restart: %v", err)
		}
	}
	b, _ := os.ReadFile(starts)
	if n := strings.Count(string(b), "start"); n != 2 {
		t.Fatalf("%d starts, want 2 (the first, one failed restart)", n)
	}
	time.Sleep(retryAfter)
	call(t, toolNamed(t, s, "echo"), `{"text":"x"}`)
	b, _ = os.ReadFile(starts)
	if n := strings.Count(string(b), "start"); n != 3 {
		t.Fatalf("%d starts, want 3 after retryAfter", n)
	}
}
