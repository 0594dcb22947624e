package gateway_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/decoding/torchdecoder"
	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/gateway/gatewaytest"
	"github.com/agentrl/agentrl/torch"
)

// A model whose outputs are not finite (one token's output weights NaN) never
// gets an empty 200: asked for logprobs, the answer is a JSON server error
// that says why, and a stream's every event is JSON, the last before
// [DONE] that error.
func TestNonFiniteLogprobsAreAnError(t *testing.T) {
	m := gatewaytest.Build(t)
	broken, err := torch.NewRandomModel(m.Policy.Config, torch.Float32, torch.CPU, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer broken.Free()
	// The output row of one ordinary token NaN: greedy decoding picks it
	// (argmax takes NaN as the largest), and every log-probability is NaN.
	head := "lm_head.weight"
	if m.Policy.Config.TieEmbeddings {
		head = "model.embed_tokens.weight"
	}
	p, err := broken.Param(head)
	if err != nil {
		t.Fatal(err)
	}
	w, err := p.Float32s()
	shape, _ := p.Shape()
	p.Free()
	if err != nil {
		t.Fatal(err)
	}
	id := int(m.Tok.Encode("Hello")[0])
	for j := 0; j < int(shape[1]); j++ {
		w[id*int(shape[1])+j] = float32(math.NaN())
	}
	x, err := torch.FromFloat32(w, shape...)
	if err != nil {
		t.Fatal(err)
	}
	err = broken.SetParam(head, x)
	x.Free()
	if err != nil {
		t.Fatal(err)
	}
	te, err := torch.NewEngine(broken, 1, 256)
	if err != nil {
		t.Fatal(err)
	}
	defer te.Free()
	sched := gateway.NewScheduler(torchdecoder.Decoder{Engine: te}, m.Format.StopIDs())
	stop := runScheduler(sched)
	defer stop()
	srv := httptest.NewServer(&gateway.Handler{Scheduler: sched, Format: m.Format, Model: "tiny"})
	defer srv.Close()

	for _, extra := range []map[string]any{{"logprobs": true, "max_tokens": 4}, {"logprobs": true, "top_logprobs": 2, "max_tokens": 4}} {
		status, body := post(t, srv.URL, firstTurn(extra), "")
		if len(body) == 0 || status == 200 {
			t.Errorf("%v: status %d, body %q; want a JSON error", extra, status, body)
		} else if e := errorBody(t, body); e["type"] != "server_error" || !strings.Contains(e["message"].(string), "not finite") {
			t.Errorf("%v: error %s", extra, body)
		}
		extra["stream"] = true
		status, body = post(t, srv.URL, firstTurn(extra), "")
		var last map[string]any
		sc := bufio.NewScanner(bytes.NewReader(body))
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok || data == "[DONE]" {
				continue
			}
			last = nil
			if err := json.Unmarshal([]byte(data), &last); err != nil {
				t.Fatalf("stream %v: an event that is not JSON: %q", extra, data)
			}
		}
		if e, ok := last["error"].(map[string]any); !ok || !strings.Contains(e["message"].(string), "not finite") {
			t.Errorf("stream %v: status %d, the last event is not the error: %s", extra, status, body)
		}
	}
}
