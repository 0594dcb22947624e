package gateway_test

import (
	"context"
	"math"
	"testing"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/decoding/torchdecoder"
	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/gateway/gatewaytest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/torch"
)

// A session's next request continues in its slot: the second prompt is
// the first prompt P, its 12-token completion C and 3 more tokens X; with
// the session, only X is prefilled (P + 3 tokens in all, not P + P + 12 +
// 3), and the second completion is the one a fresh scheduler samples from the
// whole prompt with the same seed (logprobs within 1e-4). A prompt that
// does not extend the slot's tokens starts over, prefilled whole.
func TestSessionContinuesItsSlot(t *testing.T) {
	m := gatewaytest.Build(t)
	p, _, err := m.Format.Render([]tokenizer.Message{{Role: "user", Content: "Say hello in one word."}}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	x := m.Tok.Encode("Hello there!")
	if len(x) != 3 {
		t.Fatalf("%q is %d tokens, want 3", "Hello there!", len(x))
	}
	newScheduler := func(slots int) (*gateway.Scheduler, func()) {
		te, err := torch.NewEngine(m.Policy, slots, 256)
		if err != nil {
			t.Fatal(err)
		}
		sched := gateway.NewScheduler(torchdecoder.Decoder{Engine: te}, nil)
		stop := runScheduler(sched)
		return sched, func() { stop(); te.Free() }
	}
	run := func(sched *gateway.Scheduler, prompt []int32, session string) []gateway.Token {
		r, err := sched.Submit(context.Background(), gateway.Job{Prompt: prompt, N: 1, Sampling: decoding.Sampling{Temperature: 1},
			MaxTokens: 12, Seeds: []uint64{5}, Session: session})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		toks, _ := r.Snapshot(0)
		return toks
	}
	sched, stop := newScheduler(2)
	defer stop()
	c := run(sched, p, "s")
	second := append(append(append([]int32(nil), p...), tokenIDs(c)...), x...)
	got := run(sched, second, "s")
	if n := sched.Prefilled(); n != int64(len(p)+3) {
		t.Fatalf("prefilled %d tokens, want %d + 3", n, len(p))
	}
	fresh, stopFresh := newScheduler(2)
	defer stopFresh()
	want := run(fresh, second, "")
	for i := range want {
		if got[i].ID != want[i].ID || math.Abs(float64(got[i].Logprob-want[i].Logprob)) > 1e-4 {
			t.Fatalf("token %d: continued %+v, fresh %+v", i, got[i], want[i])
		}
	}
	// Not an extension: prefilled whole.
	before := sched.Prefilled()
	run(sched, p, "s")
	if n := sched.Prefilled() - before; n != int64(len(p)) {
		t.Fatalf("a prompt that does not extend the slot prefilled %d tokens, want %d", n, len(p))
	}
	// An idle session's slot goes to a job that needs it: on one slot held
	// by session "a", a job of another session runs; then "a" starts over.
	one, stopOne := newScheduler(1)
	defer stopOne()
	run(one, p, "a")
	run(one, p, "b")
	before = one.Prefilled()
	run(one, second, "a")
	if n := one.Prefilled() - before; n != int64(len(second)) {
		t.Fatalf("after its slot was taken, session a prefilled %d tokens, want %d", n, len(second))
	}
}

func tokenIDs(toks []gateway.Token) []int32 {
	out := make([]int32, len(toks))
	for i, t := range toks {
		out[i] = t.ID
	}
	return out
}
