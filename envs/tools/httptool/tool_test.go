package httptool

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs"
)

func TestCallsTheService(t *testing.T) {
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.Store(string(b) + " " + r.Header.Get("Authorization"))
		var in struct {
			Arguments struct{ City string } `json:"arguments"`
		}
		json.Unmarshal(b, &in)
		if in.Arguments.City == "" {
			w.Write([]byte(`{"error":"which city?"}`))
			return
		}
		w.Write([]byte(`{"content":"sunny in ` + in.Arguments.City + `","refs":["Weather"]}`))
	}))
	defer srv.Close()
	tl, err := New(Config{Name: "weather", URL: srv.URL, Description: "Weather.", Headers: []string{"Authorization: Bearer k"},
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	r, err := tl.Call(context.Background(), json.RawMessage(`{"city":"Oslo"}`))
	if err != nil || !r.OK || r.Content != "sunny in Oslo" || len(r.Refs) != 1 {
		t.Fatalf("%+v %v", r, err)
	}
	if s := got.Load().(string); s != `{"arguments":{"city":"Oslo"},"name":"weather"} Bearer k` {
		t.Errorf("request %s", s)
	}
	_, err = tl.Call(context.Background(), json.RawMessage(`{}`))
	if err == nil || err.Error() != "which city?" || envs.IsFailure(err) {
		t.Fatalf("error answer: %v", err)
	}
}

// A failing service is tried again only when retries are configured; by
// default one 503 is the call's (failed) end.
func TestRetriesOffByDefault(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"content":"ok"}`))
	}))
	defer srv.Close()
	tl, _ := New(Config{Name: "t", URL: srv.URL})
	_, err := tl.Call(context.Background(), json.RawMessage(`{}`))
	if err == nil || !envs.IsFailure(err) || !strings.Contains(err.Error(), "503 Service Unavailable: busy") || calls.Load() != 1 {
		t.Fatalf("%v after %d calls", err, calls.Load())
	}
	calls.Store(0)
	tl, _ = New(Config{Name: "t", URL: srv.URL, Retries: 2})
	r, err := tl.Call(context.Background(), json.RawMessage(`{}`))
	if err != nil || r.Content != "ok" || calls.Load() != 3 {
		t.Fatalf("%+v %v after %d calls", r, err, calls.Load())
	}
}

// A hung service inside a ToolEnv: the call ends at the tool timeout with
// its latency recorded; a service that is down is a failure, not the
// model's fault.
func TestHungAndDeadService(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	hung, _ := New(Config{Name: "hung", URL: srv.URL})
	dead, _ := New(Config{Name: "dead", URL: "http://127.0.0.1:1/"})
	cfg := envs.DefaultEnvConfig()
	cfg.ToolTimeout = 200 * time.Millisecond
	cfg.Rewards.InvalidCall = -1
	env, err := envs.NewToolEnv(envs.Task{ID: "t"}, []envs.Tool{hung, dead}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.Step(context.Background(), envs.Action{Text: `<tool_call>{"name":"hung","arguments":{}}</tool_call>` +
		`<tool_call>{"name":"dead","arguments":{}}</tool_call>`})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Calls[0]; c.OK || c.Result != "Error: tool hung timed out after 200ms" || c.LatencyMS < 200 {
		t.Errorf("hung: %+v", c)
	}
	if c := res.Calls[1]; c.OK || !strings.Contains(c.Result, "connection refused") || res.ProcessReward != 0 {
		t.Errorf("dead: %+v, process reward %v", c, res.ProcessReward)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{URL: "http://x"}, "needs a name"},
		{Config{Name: "a", URL: "ftp://x"}, "want http:// or https://"},
		{Config{Name: "a", URL: "http://x", Parameters: json.RawMessage(`{"type":"object","oneOf":[]}`)}, "unsupported schema keyword"},
		{Config{Name: "a", URL: "http://x", Headers: []string{"nope"}}, `header "nope"`},
		{Config{Name: "a", URL: "http://x", Retries: -1}, "want >= 0"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

// redirectPair starts the tool's service, which answers /same itself and
// sends every other call on with a 307 (the body goes along) to a second
// service on another port, the other origin; it records what reaches the
// second service.
func redirectPair(t *testing.T) (url string, other *atomic.Value) {
	other = &atomic.Value{}
	far := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		other.Store(r.Header.Get("X-Api-Key") + "|" + r.Header.Get("Authorization") + "|" + string(b))
		w.Write([]byte(`{"content":"from the other origin"}`))
	}))
	t.Cleanup(far.Close)
	near := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/same":
			b, _ := io.ReadAll(r.Body)
			w.Write([]byte(`{"content":"` + r.Header.Get("X-Api-Key") + " " + strings.ReplaceAll(string(b), `"`, `'`) + `"}`))
		case "/moved":
			http.Redirect(w, r, "/same", http.StatusTemporaryRedirect)
		default:
			http.Redirect(w, r, far.URL+"/steal", http.StatusTemporaryRedirect)
		}
	}))
	t.Cleanup(near.Close)
	return near.URL, other
}

// By default a redirect is followed only within the url's origin: one to
// another port is refused, and the other service sees nothing.
func TestRedirectsStayInTheOrigin(t *testing.T) {
	url, other := redirectPair(t)
	headers := []string{"X-Api-Key: secret", "Authorization: Bearer k"}
	tl, err := New(Config{Name: "f", URL: url + "/moved", Headers: headers})
	if err != nil {
		t.Fatal(err)
	}
	r, err := tl.Call(context.Background(), json.RawMessage(`{"q":1}`))
	if err != nil || r.Content != `secret {'arguments':{'q':1},'name':'f'}` {
		t.Fatalf("same-origin redirect: %+v %v", r, err)
	}
	tl, err = New(Config{Name: "f", URL: url + "/away", Headers: headers})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tl.Call(context.Background(), json.RawMessage(`{"q":1}`))
	if !envs.IsFailure(err) || !strings.Contains(err.Error(), "redirect to another origin") {
		t.Fatalf("cross-origin redirect: %v", err)
	}
	if got := other.Load(); got != nil {
		t.Fatalf("the other origin got %q", got)
	}
}

// With cross-origin redirects allowed, the call reaches the other origin
// without any configured header.
func TestCrossOriginRedirectDropsHeaders(t *testing.T) {
	url, other := redirectPair(t)
	tl, err := New(Config{Name: "f", URL: url + "/away", Headers: []string{"X-Api-Key: secret", "Authorization: Bearer k"},
		CrossOriginRedirects: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := tl.Call(context.Background(), json.RawMessage(`{"q":1}`))
	if err != nil || r.Content != "from the other origin" {
		t.Fatalf("%+v %v", r, err)
	}
	if got := other.Load(); got != `||{"arguments":{"q":1},"name":"f"}` {
		t.Errorf("the other origin got %q, want the body and no configured header", got)
	}
}
