package gateway_test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// A body near the 32 MiB cap whose messages are far over the window (one
// long message, or a million short ones) is refused as over the context
// length having allocated at most 12 times its size in all, not the 33 and 67 times
// that encoding it whole cost.
func TestLargeBodiesCostBoundedMemory(t *testing.T) {
	s := serve(t, 1, false, nil)
	for _, shape := range []string{"one long message", "many short messages"} {
		req := firstTurn(nil)
		if shape == "one long message" {
			req["messages"] = []map[string]any{{"role": "user", "content": strings.Repeat("Hello there! ", 30<<20/13)}}
		} else {
			ms := make([]map[string]any, 30<<20/40)
			for i := range ms {
				ms[i] = map[string]any{"role": "user", "content": "Hello"}
			}
			req["messages"] = ms
		}
		b, _ := json.Marshal(req)
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		status, body := post(t, s.srv.URL, string(b), "")
		runtime.ReadMemStats(&after)
		if e := errorBody(t, body); status != 400 || e["code"] != "context_length_exceeded" {
			t.Errorf("%s: status %d: %s", shape, status, body)
		}
		ratio := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(b))
		t.Logf("%s: a %d MB body allocated %.1f times its size", shape, len(b)>>20, ratio)
		if ratio > 12 {
			t.Errorf("%s: a %d MB body allocated %.1f times its size", shape, len(b)>>20, ratio)
		}
	}
}
