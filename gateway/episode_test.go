package gateway_test

import (
	"testing"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/gateway/gatewaytest"
)

// Each episode's key reaches its own episode only: a request with no key
// or a revoked one is refused (401) and recorded nowhere; one with A's key
// goes to A's ledger, B's to B's. The learned conversation, sent back as
// the API returned it, extends the ledger token for token: one segment
// whose action tokens are exactly the two completions (mask 1 on the
// call's tokens and the reply's with its "<|im_end|>").
func TestEpisodeKeysAndLedger(t *testing.T) {
	keys := &gateway.Keys{}
	s := serve(t, 2, false, func(h *gateway.Handler) { h.Keys = keys })
	newEp := func() *gateway.ProgramEpisode {
		return &gateway.ProgramEpisode{Sampling: decoding.Sampling{Temperature: 0}, MaxTurnTokens: 64, MaxTotalTokens: 256, Seed: 1}
	}
	a, b := newEp(), newEp()
	ka, kb := keys.Open(a), keys.Open(b)
	revoked := keys.Open(newEp())
	keys.Close(revoked)
	for _, key := range []string{"", revoked, "sk-agentrl-made-up"} {
		if status, body := post(t, s.srv.URL, firstTurn(nil), key); status != 401 {
			t.Fatalf("key %q: %d %s", key, status, body)
		}
	}
	c := postOK(t, s.srv.URL, firstTurn(nil), ka)
	postOK(t, s.srv.URL, secondTurn(c.Choices[0].Message.ToolCalls[0]), ka)
	postOK(t, s.srv.URL, firstTurn(nil), kb)

	la, ra, bad := a.Record()
	if bad != nil || len(ra) != 2 || ra[0].Link != gateway.LinkStart || ra[1].Link != gateway.LinkExtend || len(la.Segments) != 1 {
		t.Fatalf("episode A: %+v, %d segments, refused %v", ra, len(la.Segments), bad)
	}
	lb, rb, _ := b.Record()
	if len(rb) != 1 || len(lb.Segments) != 1 {
		t.Fatalf("episode B: %+v", rb)
	}
	tok := s.model.Tok
	seg := la.Segments[0]
	var action []int32
	for i, m := range seg.Mask {
		if m == 1 {
			action = append(action, seg.Tokens[i])
		}
	}
	want := append(tok.Encode(gatewaytest.Call), tok.Encode(gatewaytest.Reply+"<|im_end|>")...)
	if !equal(action, want) {
		t.Fatalf("action tokens %q, want %q", tok.Decode(action, false), tok.Decode(want, false))
	}
	// An episode's malformed request is refused and remembered.
	if status, _ := post(t, s.srv.URL, firstTurn(map[string]any{"temperature": "x"}), kb); status != 400 {
		t.Fatalf("status %d", status)
	}
	if _, rb, bad := b.Record(); bad == nil || bad.Param != "temperature" || len(rb) != 2 || rb[1].Status != 400 {
		t.Fatalf("refusal not recorded: %+v %v", rb, bad)
	}
}
