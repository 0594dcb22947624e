package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs"
)

// httpServer is a small streamable-HTTP MCP server for the tests: it
// assigns session ids at initialize, refuses unknown sessions with 404,
// answers tools/list as JSON and tools/call as an event stream (a
// notification first, then the response). Its tools: echo, and hang,
// which answers only when the request is abandoned.
type httpServer struct {
	mu       sync.Mutex
	sessions map[string]bool
	versions []string // MCP-Protocol-Version of each tools/call
	nextID   atomic.Int64
	srv      *http.Server
	addr     string
}

func startHTTPServer(t *testing.T, addr string) *httpServer {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	h := &httpServer{sessions: map[string]bool{}, addr: l.Addr().String()}
	h.srv = &http.Server{Handler: h}
	go h.srv.Serve(l)
	t.Cleanup(func() { h.srv.Close() })
	return h
}

func (h *httpServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodDelete {
		h.mu.Lock()
		delete(h.sessions, r.Header.Get("Mcp-Session-Id"))
		h.mu.Unlock()
		return
	}
	if !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		http.Error(w, "accept both", http.StatusNotAcceptable)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var m message
	if err := json.Unmarshal(b, &m); err != nil {
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	if m.Method == "initialize" {
		id := fmt.Sprintf("s%d", h.nextID.Add(1))
		h.mu.Lock()
		h.sessions[id] = true
		h.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", id)
		writeJSON(w, m.ID, `{"protocolVersion":"2025-03-26","capabilities":{"tools":{}},"serverInfo":{"name":"h","version":"1"}}`)
		return
	}
	h.mu.Lock()
	known := h.sessions[r.Header.Get("Mcp-Session-Id")]
	h.mu.Unlock()
	if !known {
		http.Error(w, "unknown session", http.StatusNotFound)
		return
	}
	switch m.Method {
	case "notifications/initialized", "notifications/cancelled":
		w.WriteHeader(http.StatusAccepted)
	case "tools/list":
		writeJSON(w, m.ID, `{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":["string","null"]}}}},`+
			`{"name":"hang","description":"never answers","inputSchema":{"type":"object"}}]}`)
	case "tools/call":
		h.mu.Lock()
		h.versions = append(h.versions, r.Header.Get("MCP-Protocol-Version"))
		h.mu.Unlock()
		var p struct {
			Name      string            `json:"name"`
			Arguments map[string]string `json:"arguments"`
		}
		json.Unmarshal(m.Params, &p)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": a comment\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
		w.(http.Flusher).Flush()
		if p.Name == "hang" {
			<-r.Context().Done()
			return
		}
		res, _ := json.Marshal(map[string]any{"content": []map[string]string{{"type": "text", "text": "echo: " + p.Arguments["text"]}}})
		resp, _ := json.Marshal(message{JSONRPC: "2.0", ID: m.ID, Result: res})
		// The data split over two lines, as SSE allows.
		s := string(resp)
		fmt.Fprintf(w, "id: 1\ndata: %s\ndata: %s\n\n", s[:10], s[10:])
	default:
		http.Error(w, "no such method", http.StatusBadRequest)
	}
}

func writeJSON(w http.ResponseWriter, id json.RawMessage, result string) {
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(message{JSONRPC: "2.0", ID: id, Result: json.RawMessage(result)})
	w.Write(b)
}

func TestHTTPSessionsEventStreamsAndRestart(t *testing.T) {
	h := startHTTPServer(t, "127.0.0.1:0")
	s, err := Start(context.Background(), Config{Name: "h", URL: "http://" + h.addr + "/mcp", Headers: []string{"X-Key: 1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(s.Tools()) != 2 {
		t.Fatalf("tools %v", s.Tools())
	}
	echo := toolNamed(t, s, "echo")
	// A type list is dropped: any type is accepted here.
	if got := string(echo.Parameters()); got != `{"properties":{"text":{}},"type":"object"}` {
		t.Errorf("parameters %s", got)
	}
	r, err := call(t, echo, `{"text":"hi"}`)
	if err != nil || r.Content != "echo: hi" {
		t.Fatalf("echo: %+v %v", r, err)
	}
	h.mu.Lock()
	if len(h.versions) != 1 || h.versions[0] != "2025-03-26" {
		t.Errorf("MCP-Protocol-Version headers %v, want the server's 2025-03-26", h.versions)
	}
	h.mu.Unlock()

	// A hung call ends at the caller's deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = toolNamed(t, s, "hang").Call(ctx, json.RawMessage(`{}`))
	if err != context.DeadlineExceeded {
		t.Fatalf("hang: %v", err)
	}

	// The server is killed with a call in flight, then comes back on the
	// same address without its sessions.
	errc := make(chan error, 1)
	go func() {
		_, err := call(t, toolNamed(t, s, "hang"), `{}`)
		errc <- err
	}()
	time.Sleep(100 * time.Millisecond)
	h.srv.Close()
	if err := <-errc; err == nil || !envs.IsFailure(err) {
		t.Fatalf("in-flight call on a killed server: %v", err)
	}
	if _, err := call(t, echo, `{"text":"x"}`); err == nil || !envs.IsFailure(err) {
		t.Fatalf("call while the server is down: %v", err)
	}
	h2 := startHTTPServer(t, h.addr)
	time.Sleep(retryAfter) // the failed start above is not retried sooner
	r, err = call(t, echo, `{"text":"again"}`)
	if err != nil || r.Content != "echo: again" {
		t.Fatalf("after restart: %+v %v", r, err)
	}
	if n := s.Client().Sessions(); n != 2 {
		t.Errorf("%d sessions, want 2", n)
	}
	// The restarted server forgets sessions again: 404, then a new one.
	h2.mu.Lock()
	clear(h2.sessions)
	h2.mu.Unlock()
	if _, err := call(t, echo, `{"text":"x"}`); err == nil || !envs.IsFailure(err) || !strings.Contains(err.Error(), "404") {
		t.Fatalf("forgotten session: %v", err)
	}
	if _, err := call(t, echo, `{"text":"y"}`); err != nil {
		t.Fatalf("after a new session: %v", err)
	}
	if n := s.Client().Sessions(); n != 3 {
		t.Errorf("%d sessions, want 3", n)
	}
}

func TestReadEvents(t *testing.T) {
	in := "event: x\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\ndata: last"
	var seen []string
	m, err := readEvents(strings.NewReader(in), 1000, func(d []byte) (*message, bool) {
		seen = append(seen, string(d))
		return &message{}, string(d) == "last"
	})
	if err != nil || m == nil || strings.Join(seen, "|") != "{\"a\":\n1}|last" {
		t.Fatalf("%v %q", err, seen)
	}
	_, err = readEvents(strings.NewReader("data: x\n\n"), 1000, func([]byte) (*message, bool) { return nil, false })
	if err == nil || !strings.Contains(err.Error(), "ended before the response") {
		t.Fatalf("%v", err)
	}
}
