package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/trajectory"
)

func (c *fakeChat) StopIDs() []int32 { return []int32{tokImEnd, tokToolEnd} }

// decoderGen is a Generator that samples each turn with a stand-in decoder
// on one slot, prefilling the whole context every time (as an engine
// without a prefix cache would): the same model as the built-in engine's
// in the test, so both engines must keep the same trajectories.
type decoderGen struct {
	mu   sync.Mutex
	dec  decoding.Decoder
	reqs []GenRequest
	fail func(n int) error // when set, the n-th request (from 0) fails with its error
}

func (g *decoderGen) Generate(ctx context.Context, r GenRequest) (Generated, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(g.reqs)
	r.Context = slices.Clone(r.Context)
	g.reqs = append(g.reqs, r)
	if g.fail != nil {
		if err := g.fail(n); err != nil {
			return Generated{}, err
		}
	}
	if err := g.dec.Release(0); err != nil {
		return Generated{}, err
	}
	ids := make([]int64, len(r.Context))
	for i, v := range r.Context {
		ids[i] = int64(v)
	}
	if err := g.dec.Prefill(0, ids); err != nil {
		return Generated{}, err
	}
	var out Generated
	tok, lp := make([]int64, 1), make([]float32, 1)
	for len(out.Tokens) < r.MaxTokens {
		if err := g.dec.Step([]int{0}, r.Sampling, tok, lp); err != nil {
			return Generated{}, err
		}
		out.Tokens = append(out.Tokens, int32(tok[0]))
		out.Logprobs = append(out.Logprobs, lp[0])
		if slices.Contains(r.StopIDs, int32(tok[0])) {
			break
		}
	}
	return out, nil
}

// comparable is a trajectory as JSON without its wall times.
func comparable(t *testing.T, tr *trajectory.Trajectory) string {
	c := *tr
	c.DurationMS = 0
	c.Turns = slices.Clone(tr.Turns)
	for i := range c.Turns {
		c.Turns[i].LatencyMS = 0
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameAsBuiltin runs reqs on both engines and checks that Remote keeps
// exactly the built-in engine's trajectories, in the order of reqs.
func sameAsBuiltin(t *testing.T, gen Generator, fac Factory, reqs []Request, o Options) ([]*trajectory.Trajectory, Stats) {
	t.Helper()
	want, _, err := Run(context.Background(), newScripted(t, 4), &fakeChat{}, fac, reqs, o)
	if err != nil {
		t.Fatal(err)
	}
	var done []string
	o.OnDone = func(tr *trajectory.Trajectory) { done = append(done, tr.ID) }
	got, st, err := Remote{Gen: gen, Episodes: 3}.Run(context.Background(), &fakeChat{}, fac, reqs, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(done) != len(want) || st.Trajectories != len(want) {
		t.Fatalf("%d trajectories (%d done, stats %d), the built-in engine's %d", len(got), len(done), st.Trajectories, len(want))
	}
	wantByID := byID(want)
	var order []string
	for _, r := range reqs {
		for s := 0; s < r.Samples; s++ {
			order = append(order, fmt.Sprintf("%d-train-%d-%d", o.Iteration, r.Group, s))
		}
	}
	for i, tr := range got {
		if tr.ID != order[i] {
			t.Fatalf("trajectory %d is %s, want %s (the order of the requests)", i, tr.ID, order[i])
		}
		if w := wantByID[tr.ID]; w == nil || comparable(t, tr) != comparable(t, w) {
			t.Fatalf("%s on the remote engine:\n%s\nthe built-in engine's:\n%s", tr.ID, comparable(t, tr), comparable(t, w))
		}
	}
	return got, st
}

// Turns sampled by a Generator are kept exactly as the built-in engine
// keeps them (tokens, logprobs, mask, turn indices, turn records, policy
// version, rewards, stops), including under each limit; every request
// carries the whole context, the turn's budget, the chat's stop ids, the
// run's sampling and a seed of its own that a second run repeats.
func TestRemoteKeepsTheBuiltinTrajectories(t *testing.T) {
	var reqs []Request
	for k := 0; k < 7; k++ {
		reqs = append(reqs, Request{Task: task(k), Group: k, Samples: 2})
	}
	o := opts()
	o.PolicyVersion = 5
	o.Seed = 11
	o.Sampling = decoding.Sampling{Temperature: 0.7, TopK: 5, TopP: 0.9}
	gen := &decoderGen{dec: newScripted(t, 1)}
	got, st := sameAsBuiltin(t, gen, factory(10, 1000, 0), reqs, o)
	if st.Steps != len(gen.reqs) || st.Generated == 0 {
		t.Fatalf("stats %+v after %d requests", st, len(gen.reqs))
	}
	if got[0].PolicyVersion != 5 || got[len(got)-1].Turns[0].PolicyVersion != 5 {
		t.Fatalf("policy versions %d, %d, want 5", got[0].PolicyVersion, got[len(got)-1].Turns[0].PolicyVersion)
	}
	seeds := map[uint64]bool{}
	for _, r := range gen.reqs {
		k := int(r.Context[1] - 100)
		if r.Context[0] != tokPrompt || r.Sampling != o.Sampling || fmt.Sprint(r.StopIDs) != "[1 2]" {
			t.Fatalf("request %+v", r)
		}
		if want := min(o.MaxTurnTokens, o.MaxTotalTokens-len(r.Context)); r.MaxTokens != want {
			t.Fatalf("task %d: max tokens %d for a context of %d, want %d", k, r.MaxTokens, len(r.Context), want)
		}
		if r.Seed >= 1<<63 || seeds[r.Seed] {
			t.Fatalf("seed %d repeated or above 2^63", r.Seed)
		}
		seeds[r.Seed] = true
	}
	// 2 samples of tasks 0..6, task k taking k+1 turns.
	if len(gen.reqs) != 2*(1+2+3+4+5+6+7) {
		t.Fatalf("%d requests, want 56", len(gen.reqs))
	}
	again := &decoderGen{dec: newScripted(t, 1)}
	sameAsBuiltin(t, again, factory(10, 1000, 0), reqs, o)
	for _, r := range gen.reqs {
		i := slices.IndexFunc(again.reqs, func(a GenRequest) bool { return slices.Equal(a.Context, r.Context) && a.Seed == r.Seed })
		if i < 0 {
			t.Fatalf("the second run sent no request of context %v and seed %d", r.Context, r.Seed)
		}
	}

	limits := []struct {
		name                       string
		maxTurns, turnToks, budget int
	}{{"max turns", 2, 16, 1000}, {"turn tokens", 10, 2, 1000}, {"total tokens", 10, 16, 8}}
	for _, c := range limits {
		t.Run(c.name, func(t *testing.T) {
			o := opts()
			o.MaxTurnTokens, o.MaxTotalTokens = c.turnToks, min(c.budget, 200)
			sameAsBuiltin(t, &decoderGen{dec: newScripted(t, 1)}, factory(c.maxTurns, c.budget, 0), []Request{{Task: task(3), Samples: 1}, {Task: task(1), Group: 1, Samples: 2}}, o)
		})
	}
}

// A failing environment or prompt ends only its own trajectory, as with
// the built-in engine.
func TestRemoteFailuresStayLocal(t *testing.T) {
	chat := &fakeChat{badPrompt: "task 2"}
	fac := func(k int) *fakeEnv {
		e := &fakeEnv{k: k, maxTurns: 10, budget: 1000}
		if k == 3 {
			e.panicOn = 2
		}
		return e
	}
	var reqs []Request
	for k := 1; k <= 4; k++ {
		reqs = append(reqs, Request{Task: task(k), Group: k, Samples: 1})
	}
	gen := &decoderGen{dec: newScripted(t, 1)}
	trs, _, err := Remote{Gen: gen, Episodes: 2}.Run(context.Background(), chat, func(task envs.Task) (Setup, error) {
		var k int
		fmt.Sscanf(task.ID, "t%d", &k)
		return Setup{User: task.Question, Env: fac(k)}, nil
	}, reqs, opts())
	if err != nil {
		t.Fatal(err)
	}
	if trs[1].Stop != trajectory.StopError || !strings.Contains(trs[1].Error, "cannot render") {
		t.Fatalf("bad prompt: %+v", trs[1])
	}
	if trs[2].Stop != trajectory.StopError || !strings.Contains(trs[2].Error, "panicked") {
		t.Fatalf("panicking env: stop %s error %q", trs[2].Stop, trs[2].Error)
	}
	if trs[0].Stop != trajectory.StopAnswer || trs[3].Stop != trajectory.StopAnswer {
		t.Fatalf("stops %s, %s", trs[0].Stop, trs[3].Stop)
	}
}

// badGen answers every request with what it is given.
type badGen Generated

func (g badGen) Generate(context.Context, GenRequest) (Generated, error) { return Generated(g), nil }

// A generation that fails, or answers what cannot be kept, ends the whole
// rollout with an error naming the trajectory and the turn; every episode
// still running comes back cancelled.
func TestRemoteGenerationFailureEndsTheRollout(t *testing.T) {
	down := errors.New("vllm: POST http://127.0.0.1:1/v1/completions: cannot connect")
	cases := []struct {
		name string
		gen  Generator
		want string
	}{
		{"server gone", &decoderGen{dec: newScripted(t, 1), fail: func(n int) error {
			if n == 5 {
				return down
			}
			return nil
		}}, "cannot connect"},
		{"tokens after the stop", badGen{Tokens: []int32{200, tokImEnd, 200}, Logprobs: []float32{-1, -1, -1}}, "1 tokens after the turn ended"},
		{"stopped early", badGen{Tokens: []int32{200}, Logprobs: []float32{-1}}, "stopped after 1 tokens, with no turn-ending id"},
		{"logprobs missing", badGen{Tokens: []int32{200, tokImEnd}, Logprobs: []float32{-1}}, "1 logprobs for 2 tokens"},
		{"positive logprob", badGen{Tokens: []int32{tokImEnd}, Logprobs: []float32{0.5}}, "logprob 0.5"},
		{"nothing", badGen{}, "no tokens"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reqs := []Request{{Task: task(3), Samples: 2}, {Task: task(2), Group: 1, Samples: 2}, {Task: task(4), Group: 2, Samples: 2}}
			trs, _, err := Remote{Gen: c.gen, Episodes: 2}.Run(context.Background(), &fakeChat{}, factory(10, 1000, 0), reqs, opts())
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "rollout 3-train-") {
				t.Fatalf("error %v, want one naming the trajectory and %q", err, c.want)
			}
			if len(trs) != 6 {
				t.Fatalf("%d trajectories, want 6", len(trs))
			}
			cancelled := 0
			for _, tr := range trs {
				if tr.Stop == trajectory.StopCancelled {
					cancelled++
				}
			}
			if cancelled == 0 {
				t.Fatalf("no trajectory cancelled: %v", trs)
			}
		})
	}
}

// Cancellation returns every trajectory, unfinished ones marked cancelled.
// A rollout cancelled while a turn is generated starts no turn after it,
// even when the generator answers that turn (as a server may that
// finished it before it saw the cancellation): the episode ends
// cancelled. Before, the episode went on to its answer, and an episode
// whose goroutine won the race for a free slot against the cancellation
// ran whole (TestRemoteCancellation failed now and then under load).
func TestRemoteStartsNoTurnAfterCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	gen := &decoderGen{dec: newScripted(t, 1), fail: func(n int) error {
		if n == 0 {
			cancel()
		}
		return nil
	}}
	trs, _, err := Remote{Gen: gen, Episodes: 1}.Run(ctx, &fakeChat{}, factory(10, 1000, 0), []Request{{Task: task(2), Samples: 1}}, opts())
	if !errors.Is(err, context.Canceled) || len(trs) != 1 || trs[0].Stop != trajectory.StopCancelled {
		t.Fatalf("error %v, %d trajectories (%v); want context.Canceled and one cancelled", err, len(trs), trs)
	}
	if len(gen.reqs) != 1 {
		t.Errorf("%d turns requested, want 1: none after the cancellation", len(gen.reqs))
	}
}

func TestRemoteCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	gen := &decoderGen{dec: newScripted(t, 1), fail: func(n int) error {
		if n == 2 {
			cancel()
			return ctx.Err()
		}
		return nil
	}}
	reqs := []Request{{Task: task(2), Samples: 2}, {Task: task(3), Group: 1, Samples: 2}}
	trs, _, err := Remote{Gen: gen, Episodes: 1}.Run(ctx, &fakeChat{}, factory(10, 1000, 0), reqs, opts())
	if !errors.Is(err, context.Canceled) || len(trs) != 4 {
		t.Fatalf("error %v, %d trajectories; want context.Canceled and 4", err, len(trs))
	}
	for _, tr := range trs {
		if tr.Stop != trajectory.StopCancelled {
			t.Fatalf("%s: stop %s", tr.ID, tr.Stop)
		}
	}
}
