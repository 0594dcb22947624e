package gateway_test

import (
	"context"
	"testing"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/gateway"
)

// swapDecoder samples token 10+k at its k-th step (logprob -k/10) and
// swaps its weights (version 3 to 4) after its swapAt-th step, as the
// rollout role's copy of the policy takes new weights between two steps.
type swapDecoder struct {
	steps, swapAt int
	version, used int // of the weights; the last step sampled with
}

func (d *swapDecoder) Slots() int                           { return 2 }
func (d *swapDecoder) MaxLen() int                          { return 64 }
func (d *swapDecoder) Prefill(int, []int64) error           { return nil }
func (d *swapDecoder) PrefillBatch([]int, [][]int64) error  { return nil }
func (d *swapDecoder) CopySlot(int, int) error              { return nil }
func (d *swapDecoder) Release(int) error                    { return nil }
func (d *swapDecoder) Seed(int, uint64) error               { return nil }
func (d *swapDecoder) PendingLogits(int) ([]float32, error) { return nil, nil }

func (d *swapDecoder) Step(slots []int, _ decoding.Sampling, tokens []int64, logprobs []float32) error {
	d.steps++
	d.used = d.version
	for i := range slots {
		tokens[i], logprobs[i] = int64(10+d.steps), -float32(d.steps)/10
	}
	if d.steps == d.swapAt { // new weights arrive before the next step
		d.version++
	}
	return nil
}

// Every token records the version of the step that sampled it, across a
// weight swap, and a ledger turn records its first token's (the oldest):
// a completion of 4 tokens whose weights change after its second step
// has tokens of versions 3, 3, 4, 4 and is turn version 3; the next
// completion, all sampled after the swap, is version 4. Without
// Engine.Version every token is version 0.
func TestTokensKeepTheirVersionsAcrossSwaps(t *testing.T) {
	complete := func(sched *gateway.Scheduler, prompt []int32) []gateway.Token {
		t.Helper()
		r, err := sched.Submit(context.Background(), gateway.Job{Prompt: prompt, N: 1, Sampling: decoding.Sampling{Temperature: 1},
			MaxTokens: 4, Seeds: []uint64{1}})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		toks, fin := r.Snapshot(0)
		if fin != gateway.Length || len(toks) != 4 {
			t.Fatalf("finish %v after %d tokens, want 4 (length)", fin, len(toks))
		}
		return toks
	}
	dec := &swapDecoder{swapAt: 2, version: 3}
	sched := gateway.NewScheduler(dec, nil)
	sched.Version = func() int { return dec.used }
	stop := runScheduler(sched)
	first := complete(sched, []int32{1, 2})
	second := complete(sched, []int32{1, 2, 11, 12, 13, 14, 5})
	stop()
	var got []int
	for _, tok := range append(append([]gateway.Token(nil), first...), second...) {
		got = append(got, tok.Version)
	}
	if want := []int{3, 3, 4, 4, 4, 4, 4, 4}; !equal(got, want) {
		t.Errorf("token versions %v, want %v", got, want)
	}
	var l gateway.Ledger
	l.Add([]int32{1, 2}, first, "a")
	l.Add([]int32{1, 2, 11, 12, 13, 14, 5}, second, "b")
	if len(l.Segments) != 1 || len(l.Segments[0].Turns) != 2 {
		t.Fatalf("ledger %+v, want one segment of two turns", l.Segments)
	}
	if v0, v1 := l.Segments[0].Turns[0].PolicyVersion, l.Segments[0].Turns[1].PolicyVersion; v0 != 3 || v1 != 4 {
		t.Errorf("turn versions %d and %d, want 3 (its first token's) and 4", v0, v1)
	}

	plain := gateway.NewScheduler(&swapDecoder{swapAt: 2, version: 3}, nil)
	stop = runScheduler(plain)
	toks := complete(plain, []int32{1, 2})
	stop()
	for i, tok := range toks {
		if tok.Version != 0 {
			t.Errorf("without Engine.Version, token %d has version %d, want 0", i, tok.Version)
		}
	}
}
