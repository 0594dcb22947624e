package localorigin

import (
	"net/http/httptest"
	"testing"
)

// Hosts and origins, each accepted or refused as a browser attack or a
// local client would meet them.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name, listen, method, host string
		headers                    map[string]string
		ok                         bool
	}{
		{"a local client", "127.0.0.1", "POST", "127.0.0.1:8000", nil, true},
		{"localhost", "127.0.0.1", "POST", "localhost:8000", nil, true},
		{"IPv6 loopback", "::1", "POST", "[::1]:8000", nil, true},
		{"DNS rebinding", "127.0.0.1", "POST", "evil.example:8000", nil, false},
		{"rebinding on every interface", "0.0.0.0", "GET", "evil.example:8000", nil, false},
		{"an IP on every interface", "0.0.0.0", "POST", "192.168.1.7:8000", nil, true},
		{"the configured name", "gpu-3.lab", "POST", "GPU-3.lab:8000", nil, true},
		{"another IP than the one listened on", "192.168.1.7", "POST", "10.0.0.1:8000", nil, false},
		{"same origin", "127.0.0.1", "POST", "127.0.0.1:8000", map[string]string{"Origin": "http://127.0.0.1:8000"}, true},
		{"cross-site simple POST", "127.0.0.1", "POST", "127.0.0.1:8000", map[string]string{"Origin": "https://evil.example"}, false},
		{"another port", "127.0.0.1", "POST", "127.0.0.1:8000", map[string]string{"Origin": "http://127.0.0.1:9000"}, false},
		{"opaque origin", "127.0.0.1", "POST", "127.0.0.1:8000", map[string]string{"Origin": "null"}, false},
		{"cross-site image", "127.0.0.1", "GET", "127.0.0.1:8000", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "no-cors"}, false},
		{"cross-site link", "127.0.0.1", "GET", "127.0.0.1:8000", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, true},
		{"cross-site form POST", "127.0.0.1", "POST", "127.0.0.1:8000", map[string]string{"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}, false},
		{"the app's own fetch", "127.0.0.1", "GET", "127.0.0.1:8000", map[string]string{"Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}, true},
	} {
		r := httptest.NewRequest(c.method, "/", nil)
		r.Host = c.host
		for k, v := range c.headers {
			r.Header.Set(k, v)
		}
		if err := Check(r, c.listen); (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok %v", c.name, err, c.ok)
		}
	}
}
