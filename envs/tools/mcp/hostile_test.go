package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs"
)

// hostileHead and hostileLoop make a minimal MCP server over stdio
// (Python, standard library only) that a test completes with code in
// between: it may replace TOOLS, on_initialize or on_call, or misbehave
// before serving. Code after the loop runs once stdin ends.
const hostileHead = `
import json, os, signal, subprocess, sys, time
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
TOOLS = [{"name": "echo", "inputSchema": {"type": "object"}}]
def on_initialize(m):
    send({"jsonrpc": "2.0", "id": m["id"], "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
          "serverInfo": {"name": "hostile", "version": "1"}}})
def on_call(m):
    send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": "ok"}]}})
`

const hostileLoop = `
for line in sys.stdin:
    m = json.loads(line)
    method = m.get("method")
    if method == "initialize":
        on_initialize(m)
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": m["id"], "result": {"tools": TOOLS}})
    elif method == "tools/call":
        on_call(m)
`

// hostileServer writes the server with body before its loop and after
// after it into a temporary folder, and returns a config starting it.
func hostileServer(t *testing.T, body, after string) Config {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		t.Skipf("the hostile MCP servers need %s: %v", python, err)
	}
	path := filepath.Join(t.TempDir(), "server.py")
	if err := os.WriteFile(path, []byte(hostileHead+body+hostileLoop+after), 0o644); err != nil {
		t.Fatal(err)
	}
	return Config{Name: "hostile", Command: python, Args: []string{path}, StartTimeout: 5 * time.Second}
}

// within runs f and fails the test if it has not returned after d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s", what, d)
	}
}

// alive reports whether process pid runs (a zombie has ended).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, after, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(after, "Z")
}

// endsWithin polls until process pid has ended, up to d.
func endsWithin(pid int, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !alive(pid) {
			return true
		}
	}
	return false
}

// readPidFile waits up to 5 s for a pid written to path.
func readPidFile(t *testing.T, path string) int {
	t.Helper()
	for range 250 {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

// stubborn ignores SIGTERM and the end of its stdin, and writes its pid.
const stubborn = `
signal.signal(signal.SIGTERM, signal.SIG_IGN)
with open(sys.argv[1] + ".pid", "w") as f:
    f.write("%d\n" % os.getpid())
`

// A server that ignores SIGTERM and the end of its stdin and started a
// helper in a session of its own that keeps its stdout and stderr: Close
// returns all the same (the helper's pipes are given up), and the server
// is gone.
func TestStdioCloseIsBounded(t *testing.T) {
	cfg := hostileServer(t, stubborn+`
helper = subprocess.Popen(["setsid", "sleep", "30"])
with open(sys.argv[1] + ".helper", "w") as f:
    f.write("%d\n" % helper.pid)
`, "while True:\n    time.sleep(1)\n")
	cfg.Args = append(cfg.Args, cfg.Args[0])
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	helper := readPidFile(t, cfg.Args[0]+".helper")
	defer syscall.Kill(helper, syscall.SIGKILL)
	server := readPidFile(t, cfg.Args[0]+".pid")
	within(t, 15*time.Second, "Close", func() { s.Close() })
	if !endsWithin(server, 2*time.Second) {
		t.Fatalf("the server %d outlived Close", server)
	}
}

// The helper process of TestStdioServerDiesWithTrainer: it starts the
// server of MCP_TEST_SERVER_ARGS (JSON) and waits to be killed.
func TestHelperTrainer(t *testing.T) {
	args := os.Getenv("MCP_TEST_SERVER_ARGS")
	if args == "" {
		t.Skip("run by TestStdioServerDiesWithTrainer")
	}
	cfg := Config{Name: "stubborn", Command: python}
	if err := json.Unmarshal([]byte(args), &cfg.Args); err != nil {
		t.Fatal(err)
	}
	if _, err := Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	fmt.Println("started")
	time.Sleep(30 * time.Second)
}

// A trainer killed by SIGKILL cannot stop its servers: a server that
// ignores the end of its stdin and SIGTERM dies with it all the same.
func TestStdioServerDiesWithTrainer(t *testing.T) {
	cfg := hostileServer(t, stubborn, "while True:\n    time.sleep(1)\n")
	args, _ := json.Marshal(append(cfg.Args, cfg.Args[0]))
	trainer := exec.Command(os.Args[0], "-test.run=^TestHelperTrainer$")
	trainer.Env = append(os.Environ(), "MCP_TEST_SERVER_ARGS="+string(args))
	if err := trainer.Start(); err != nil {
		t.Fatal(err)
	}
	defer trainer.Wait()
	defer trainer.Process.Kill()
	server := readPidFile(t, cfg.Args[0]+".pid")
	defer syscall.Kill(server, syscall.SIGKILL)
	if err := trainer.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !endsWithin(server, 5*time.Second) {
		t.Fatalf("the server %d outlived its trainer", server)
	}
}

// A server that stops reading its stdin: a call whose request does not
// fit in the pipe returns by its deadline, the server counts as dead,
// and the next call runs on a new one.
func TestStdioWriteRespectsTheDeadline(t *testing.T) {
	s := startServer(t, hostileServer(t, `
TOOLS = [{"name": "block", "inputSchema": {"type": "object"}}, {"name": "echo", "inputSchema": {"type": "object"}}]
def on_call(m):
    if m["params"]["name"] == "block":
        time.sleep(60)  # on the reading thread: stdin is read no more
    send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": "ok"}]}})
`, ""))
	callWithin := func(name, args string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		var err error
		within(t, 5*time.Second, name, func() { _, err = toolNamed(t, s, name).Call(ctx, json.RawMessage(args)) })
		return err
	}
	if err := callWithin("block", `{}`); err != context.DeadlineExceeded {
		t.Fatalf("block: %v", err)
	}
	big := fmt.Sprintf(`{"text": %q}`, strings.Repeat("x", 1<<20))
	if err := callWithin("echo", big); err == nil {
		t.Fatal("a request the server cannot take succeeded")
	}
	var r envs.Result
	var err error
	within(t, 10*time.Second, "the call after", func() { r, err = call(t, toolNamed(t, s, "echo"), `{}`) })
	if err != nil || r.Content != "ok" {
		t.Fatalf("the call after: %+v %v", r, err)
	}
	if n := s.Client().Sessions(); n != 2 {
		t.Fatalf("%d sessions, want 2 (the server that stopped reading was restarted)", n)
	}
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A server that answers with a line that never ends: the call fails
// saying the message is over the cap, without holding the flood in
// memory, and the next call runs on a new server.
func TestStdioLineIsCapped(t *testing.T) {
	const limit, flood = 64 << 10, 64 << 20
	cfg := hostileServer(t, fmt.Sprintf(`
TOOLS = [{"name": "flood", "inputSchema": {"type": "object"}}, {"name": "echo", "inputSchema": {"type": "object"}}]
def on_call(m):
    if m["params"]["name"] == "flood":
        chunk = "x" * (1 << 20)
        for _ in range(%d):
            sys.stdout.write(chunk)
        sys.stdout.flush()
        time.sleep(60)
    send({"jsonrpc": "2.0", "id": m["id"], "result": {"content": [{"type": "text", "text": "ok"}]}})
`, flood>>20), "")
	cfg.MaxMessage = limit
	s := startServer(t, cfg)
	var err error
	grew := allocated(func() { _, err = call(t, toolNamed(t, s, "flood"), `{}`) })
	if err == nil || !envs.IsFailure(err) || !strings.Contains(err.Error(), "a message from the server is over 65536 bytes (tools.mcp[].max_message_mb)") {
		t.Fatalf("flood: %v", err)
	}
	if grew > flood/8 {
		t.Fatalf("%d bytes allocated for a %d-byte line", grew, flood)
	}
	if r, err := call(t, toolNamed(t, s, "echo"), `{}`); err != nil || r.Content != "ok" {
		t.Fatalf("after the flood: %+v %v", r, err)
	}
}

// Replies that are not JSON, too deeply nested, or answer a request
// that was not sent: the start fails at its deadline, saying what the
// server sent.
func TestStdioMalformedRepliesAreReported(t *testing.T) {
	for _, c := range []struct{ reply, want string }{
		{`sys.stdout.write("garbage {\n"); sys.stdout.flush()`,
			`the server's first malformed message: invalid character 'g' looking for beginning of value: garbage {`},
		{`send({"jsonrpc": "2.0", "id": m["id"] + 100, "result": {}})`,
			`the server's first malformed message: a response to request 101, which was not sent: {"jsonrpc": "2.0", "id": 101`},
		{`send({"jsonrpc": "2.0", "id": "x", "result": {}})`,
			`the server's first malformed message: a response whose id is not one the client sends: {"jsonrpc": "2.0", "id": "x"`},
		{`sys.stdout.write('{"jsonrpc": "2.0", "id": %d, "result": ' % m["id"] + "[" * 20000 + "]" * 20000 + "}\n"); sys.stdout.flush()`,
			`exceeded max depth: {"jsonrpc": "2.0", "id": 1, "result": [[[[`},
	} {
		cfg := hostileServer(t, "def on_initialize(m):\n    "+c.reply+"\n", "")
		cfg.StartTimeout = 300 * time.Millisecond
		_, err := Start(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "initialize: context deadline exceeded") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n%v\nwant %q", c.reply, err, c.want)
		}
	}
}

// Tool names that OpenAI's function names would refuse are refused at
// start, naming the server and the tool; a prefix counts.
func TestToolNamesAreValidated(t *testing.T) {
	for _, c := range []struct{ name, prefix, want string }{
		{"", "", `tool name ""`},
		{"two words", "", `tool name "two words"`},
		{"</tool_call>", "", `tool name "</tool_call>"`},
		{"tab\there", "", `tool name "tab\there"`},
		{strings.Repeat("a", 64), "x_", `tool name "x_aaaa`},
	} {
		tools, _ := json.Marshal([]map[string]any{{"name": "fine-name_1", "inputSchema": map[string]any{}}, {"name": c.name, "inputSchema": map[string]any{}}})
		cfg := hostileServer(t, fmt.Sprintf("TOOLS = json.loads(%q)\n", tools), "")
		cfg.Prefix = c.prefix
		_, err := Start(context.Background(), cfg)
		if err == nil || !strings.Contains(err.Error(), "MCP server hostile: "+c.want) || !strings.Contains(err.Error(), "want 1 to 64 letters, digits, _ or -") {
			t.Errorf("%q: %v", c.name, err)
		}
	}
	// A name that is refused but not exposed (Tools leaves it out) is fine.
	cfg := hostileServer(t, `TOOLS = [{"name": "echo", "inputSchema": {}}, {"name": "bad name", "inputSchema": {}}]`+"\n", "")
	cfg.Tools = []string{"echo"}
	startServer(t, cfg)
}

// What a server writes to its stderr or in an error reaches the terminal
// with its control characters escaped.
func TestServerTextIsEscaped(t *testing.T) {
	s := startServer(t, hostileServer(t, `
TOOLS = [{"name": "die", "inputSchema": {}}, {"name": "refuse", "inputSchema": {}}]
def on_call(m):
    if m["params"]["name"] == "die":
        sys.stderr.write("\x1b[2J\x1b[31mboom\n")
        sys.stderr.flush()
        os._exit(1)
    send({"jsonrpc": "2.0", "id": m["id"], "error": {"code": 1, "message": "\x1b]0;title\x07no"}})
`, ""))
	_, err := call(t, toolNamed(t, s, "die"), `{}`)
	if err == nil || !strings.Contains(err.Error(), `its last stderr: \x1b[2J\x1b[31mboom`) || strings.Contains(err.Error(), "\x1b") {
		t.Fatalf("die: %q", err)
	}
	_, err = call(t, toolNamed(t, s, "refuse"), `{}`)
	if err == nil || !strings.Contains(err.Error(), `\x1b]0;title\x07no (code 1)`) || strings.Contains(err.Error(), "\x1b") {
		t.Fatalf("refuse: %q", err)
	}
}

// hostileHTTP starts a streamable-HTTP MCP server with one tool, "call",
// whose tools/call is answered by answer (with the request's id).
func hostileHTTP(t *testing.T, answer func(w http.ResponseWriter, id json.RawMessage)) Config {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m message
		json.NewDecoder(r.Body).Decode(&m)
		switch m.Method {
		case "initialize":
			writeJSON(w, m.ID, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"h","version":"1"}}`)
		case "tools/list":
			writeJSON(w, m.ID, `{"tools":[{"name":"call","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			answer(w, m.ID)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(srv.Close)
	return Config{Name: "hostile", URL: srv.URL}
}

// An event stream or a JSON body over the cap fails the call saying so,
// without holding the flood in memory.
func TestHTTPResponsesAreCapped(t *testing.T) {
	const limit, flood = 64 << 10, 64 << 20
	chunk := strings.Repeat("x", 1<<20)
	for _, c := range []struct {
		kind, want string
		write      func(w http.ResponseWriter)
	}{
		{"text/event-stream", "the event stream is over 65536 bytes (tools.mcp[].max_message_mb)", func(w http.ResponseWriter) {
			io.WriteString(w, "data: ")
			for range flood >> 20 {
				io.WriteString(w, chunk)
			}
		}},
		{"application/json", "the response is over 65536 bytes (tools.mcp[].max_message_mb)", func(w http.ResponseWriter) {
			io.WriteString(w, `{"jsonrpc": "2.0", "id": 0, "result": "`)
			for range flood >> 20 {
				io.WriteString(w, chunk)
			}
		}},
	} {
		cfg := hostileHTTP(t, func(w http.ResponseWriter, _ json.RawMessage) {
			w.Header().Set("Content-Type", c.kind)
			c.write(w)
		})
		cfg.MaxMessage = limit
		s := startServer(t, cfg)
		var err error
		grew := allocated(func() { _, err = call(t, s.Tools()[0], `{}`) })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v", c.kind, err)
		}
		if grew > flood/8 {
			t.Fatalf("%s: %d bytes allocated for a %d-byte flood", c.kind, grew, flood)
		}
	}
}

// An event stream that carries malformed messages instead of the answer:
// the call's error says what the first one was.
func TestHTTPMalformedEventsAreReported(t *testing.T) {
	s := startServer(t, hostileHTTP(t, func(w http.ResponseWriter, id json.RawMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"jsonrpc\": \"2.0\", \"id\": 99%s, \"result\": {}}\n\ndata: not json\n\n", id)
	}))
	_, err := call(t, s.Tools()[0], `{}`)
	if err == nil || !strings.Contains(err.Error(), "the event stream ended before the response") ||
		!strings.Contains(err.Error(), "(the server's first malformed message: a response to request 99") {
		t.Fatalf("%v", err)
	}
}
