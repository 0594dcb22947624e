package gateway_test

import (
	"net/http/httptest"
	"testing"

	"github.com/agentrl/agentrl/decoding/torchdecoder"
	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/gateway/gatewaytest"
	"github.com/agentrl/agentrl/torch"
)

// served is a live gateway over the trained tiny model.
type served struct {
	srv   *httptest.Server
	sched *gateway.Scheduler
	h     *gateway.Handler
	model *gatewaytest.Model
}

// serve starts a scheduler of slots slots (stopping at the chat format's
// stop ids, or at none when noStops) on its own locked thread, and the
// handler in a test server; edit adjusts the handler before it serves.
func serve(t *testing.T, slots int, noStops bool, edit func(*gateway.Handler)) *served {
	t.Helper()
	m := gatewaytest.Build(t)
	te, err := torch.NewEngine(m.Policy, slots, 256)
	if err != nil {
		t.Fatal(err)
	}
	stops := m.Format.StopIDs()
	if noStops {
		stops = nil
	}
	sched := gateway.NewScheduler(torchdecoder.Decoder{Engine: te}, stops)
	stop := runScheduler(sched)
	h := &gateway.Handler{Scheduler: sched, Format: m.Format, Model: "tiny"}
	if edit != nil {
		edit(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		stop()
		te.Free()
	})
	return &served{srv: srv, sched: sched, h: h, model: m}
}

// The fixture's model reproduces its conversation greedily: the check
// every test of the served model stands on.
func TestFixtureLearnedItsConversation(t *testing.T) {
	serve(t, 1, false, nil)
}
