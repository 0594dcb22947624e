package gateway_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/gateway"
)

// A client that sends its headers and then trickles its body is cut off at
// the body timeout with a 408, whether its key is right (the body is read)
// or wrong (it is not read, but the connection is not held for it).
func TestTricklingBodyTimesOut(t *testing.T) {
	s := serve(t, 1, false, func(h *gateway.Handler) { h.APIKey, h.BodyTimeout = "sk-right", 500*time.Millisecond })
	for _, c := range []struct {
		key    string
		status int
	}{{"sk-right", 408}, {"sk-wrong", 401}} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(s.srv.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"model\":", c.key)
		start := time.Now()
		stop := make(chan struct{})
		go func() { // one byte a 100 ms, until the server hangs up
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					if _, err := conn.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Errorf("key %s: no answer within 5 s of trickling: %v", c.key, err)
		} else if resp.StatusCode != c.status {
			t.Errorf("key %s: status %d, want %d", c.key, resp.StatusCode, c.status)
		}
		if resp != nil {
			resp.Body.Close()
		}
		// The server lets go of the connection: a read ends (EOF) well
		// before the 5 s the trickle would take to finish.
		buf := make([]byte, 1)
		for {
			if _, err := conn.Read(buf); err != nil {
				if time.Since(start) > 4*time.Second {
					t.Errorf("key %s: the connection was held %s: %v", c.key, time.Since(start).Round(time.Millisecond), err)
				}
				break
			}
		}
		close(stop)
		conn.Close()
	}
}
