package inspect

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// A web page cannot reach the app: a Host that is not a loopback name (DNS
// rebinding) and a browser request from another site are refused with a
// 403 page saying why; the app's own pages, and a link followed from
// elsewhere, are served.
func TestOtherOriginsRefused(t *testing.T) {
	ts := newTestServer(t, Source{Label: "demo", Path: writeFixture(t, t.TempDir(), "demo", 2)})
	sql := "/r/0/sql?q=" + url.QueryEscape("SELECT 1")
	for _, c := range []struct {
		name, path, host string
		headers          map[string]string
		status           int
		says             string
	}{
		{"the app itself", sql, "", nil, 200, ""},
		{"localhost", "/", "localhost", nil, 200, ""},
		{"DNS rebinding", sql, "attacker.example", nil, 403, "attacker.example"},
		{"a cross-site image", sql, "", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}, 403, "cross-site"},
		{"a cross-origin fetch", "/api/state", "", map[string]string{"Origin": "https://attacker.example"}, 403, "attacker.example"},
		{"a link followed", "/", "", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, 200, ""},
	} {
		req, _ := http.NewRequest("GET", ts.URL+c.path, nil)
		if c.host != "" {
			req.Host = c.host
		}
		for k, v := range c.headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.says) {
			t.Errorf("%s: status %d, want %d naming %q", c.name, resp.StatusCode, c.status, c.says)
		}
	}
}
