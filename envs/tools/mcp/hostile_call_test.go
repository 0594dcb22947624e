package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Malformed replies during a call that then runs out of time are
// reported with the error, over stdio and over HTTP (an event stream that
// stays open), not only "context deadline exceeded".
func TestMalformedRepliesDuringACallAreReported(t *testing.T) {
	stdio := hostileServer(t, `def on_call(m):
    sys.stdout.write("garbage {\n"); sys.stdout.flush()
`, "")
	hang := make(chan struct{})
	web := hostileHTTP(t, func(w http.ResponseWriter, id json.RawMessage) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: not json\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-hang:
		case <-time.After(10 * time.Second):
		}
	})
	t.Cleanup(func() { close(hang) }) // before the server closes
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"stdio", stdio, "(the server's first malformed message: invalid character 'g' looking for beginning of value: garbage {"},
		{"http", web, "(the server's first malformed message: invalid character 'o' in literal null (expecting 'u'): not json"},
	} {
		s := startServer(t, c.cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err := s.Tools()[0].Call(ctx, json.RawMessage(`{}`))
		cancel()
		if err == nil || !strings.Contains(err.Error(), "context deadline exceeded") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %q", c.name, err, c.want)
		}
	}
}

// An MCP server over HTTP that redirects to another origin is not
// followed: the configured headers (an API key) never reach the other
// origin, and the call fails saying why. A redirect within the origin is
// followed, with the headers.
func TestHTTPCrossOriginRedirectKeepsHeaders(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("X-Api-Key")+"|"+r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusTeapot)
	}))
	defer other.Close()
	cfg := hostileHTTP(t, func(w http.ResponseWriter, id json.RawMessage) {})
	inner := cfg.URL
	redirect := func(to string) Config {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Api-Key") != "secret" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			http.Redirect(w, r, to, http.StatusTemporaryRedirect)
		}))
		t.Cleanup(srv.Close)
		return Config{Name: "redirecting", URL: srv.URL, Headers: []string{"X-Api-Key: secret", "Authorization: Bearer secret"},
			StartTimeout: 5 * time.Second}
	}
	_, err := Start(context.Background(), redirect(other.URL))
	if err == nil || !strings.Contains(err.Error(), "redirect to another origin") {
		t.Errorf("a redirect to another origin: %v, want a refusal", err)
	}
	mu.Lock()
	if len(leaked) > 0 {
		t.Errorf("the other origin received %q", leaked)
	}
	mu.Unlock()
	// Same origin: a path on the redirecting server itself.
	same := httptest.NewServer(nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		resp, err := http.Post(inner, "application/json", r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 1<<16)
		n, _ := resp.Body.Read(buf)
		w.Write(buf[:n])
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
	})
	same.Config.Handler = mux
	defer same.Close()
	s, err := Start(context.Background(), Config{Name: "same", URL: same.URL + "/", Headers: []string{"X-Api-Key: secret"}, StartTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("a redirect within the origin: %v", err)
	}
	s.Close()
}
