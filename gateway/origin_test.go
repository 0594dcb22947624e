package gateway_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// A web page cannot use the server: a cross-site simple POST (text/plain,
// which needs no preflight) and a DNS-rebound Host are refused with a 403
// error object saying why, before the body is read; a local client is
// answered.
func TestOtherOriginsRefused(t *testing.T) {
	s := serve(t, 1, false, nil)
	body, _ := json.Marshal(firstTurn(map[string]any{"max_tokens": 2}))
	for _, c := range []struct {
		name    string
		host    string
		headers map[string]string
		status  int
		says    string
	}{
		{"a local client", "", map[string]string{"Content-Type": "application/json"}, 200, ""},
		{"cross-site simple POST", "", map[string]string{"Content-Type": "text/plain", "Origin": "https://attacker.example"}, 403, "attacker.example"},
		{"DNS rebinding", "attacker.example:8000", map[string]string{"Content-Type": "text/plain"}, 403, "attacker.example"},
	} {
		req, _ := http.NewRequest("POST", s.srv.URL+"/v1/chat/completions", bytes.NewReader(body))
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
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, resp.StatusCode, c.status, b)
			continue
		}
		if c.status != 200 {
			if e := errorBody(t, b); !strings.Contains(e["message"].(string), c.says) {
				t.Errorf("%s: %s does not name %q", c.name, b, c.says)
			}
		}
	}
}
