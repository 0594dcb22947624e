package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/decoding/torchdecoder"
	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/gateway/gatewaytest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/torch"
)

// Jobs queued together decode together, and each one's tokens are those
// it gets alone: four jobs of 20 tokens (no stop ids, so each runs to its
// limit) submitted before the scheduler starts take 20 decode calls of 4
// slots, not 80; then each runs again alone with the same seed and samples
// the same tokens (each slot has its own random stream), logprobs within
// 1e-4. The model is untrained, so its distributions are nearly uniform
// and the seeds sample different tokens by construction.
func TestJobsDecodeTogetherAsAlone(t *testing.T) {
	m := gatewaytest.Build(t)
	policy := m.Untrained(t, 11)
	prompt, _, err := m.Format.Render([]tokenizer.Message{{Role: "user", Content: "Say hello in one word."}}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	run := func(slots int, seeds []uint64) ([][]gateway.Token, int64) {
		te, err := torch.NewEngine(policy, slots, 256)
		if err != nil {
			t.Fatal(err)
		}
		defer te.Free()
		sched := gateway.NewScheduler(torchdecoder.Decoder{Engine: te}, nil)
		var rs []*gateway.Pending
		for _, s := range seeds {
			r, err := sched.Submit(context.Background(), gateway.Job{Prompt: prompt, N: 1, Sampling: decoding.Sampling{Temperature: 1},
				MaxTokens: 20, Seeds: []uint64{s}})
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		stop := runScheduler(sched)
		var out [][]gateway.Token
		for _, r := range rs {
			if err := r.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			toks, fin := r.Snapshot(0)
			if fin != gateway.Length || len(toks) != 20 {
				t.Fatalf("finish %v after %d tokens", fin, len(toks))
			}
			out = append(out, toks)
		}
		stop()
		steps, gen := sched.Stats()
		if gen != int64(20*len(seeds)) {
			t.Fatalf("%d tokens generated", gen)
		}
		return out, steps
	}
	seeds := []uint64{1, 2, 3, 4}
	together, steps := run(4, seeds)
	if steps != 20 {
		t.Fatalf("4 jobs of 20 tokens took %d decode calls, want 20", steps)
	}
	for i, s := range seeds {
		alone, _ := run(1, []uint64{s})
		for j := range alone[0] {
			a, b := alone[0][j], together[i][j]
			if a.ID != b.ID || math.Abs(float64(a.Logprob-b.Logprob)) > 1e-4 {
				t.Fatalf("seed %d token %d: alone %+v, together %+v", s, j, a, b)
			}
		}
	}
	// The seeds matter. The untrained model's tokens are nearly uniform
	// over the vocabulary (each sampled token's logprob within 1 of
	// -log V), so two seeds agree on a token with probability about 1/V,
	// and every pair of the four must differ somewhere in 20 tokens.
	flat := -math.Log(float64(m.Tok.VocabSize()))
	for i, toks := range together {
		for j, tk := range toks {
			if math.Abs(float64(tk.Logprob)-flat) > 1 {
				t.Fatalf("seed %d token %d: logprob %.3f, not near uniform (%.3f)", seeds[i], j, tk.Logprob, flat)
			}
		}
	}
	same := func(a, b gateway.Token) bool { return a.ID == b.ID }
	for i := range together {
		for j := i + 1; j < len(together); j++ {
			if slices.EqualFunc(together[i], together[j], same) {
				t.Fatalf("seeds %d and %d sampled the same 20 tokens", seeds[i], seeds[j])
			}
		}
	}
}

// Concurrent HTTP clients are all answered, and their requests share
// decode calls (more tokens than calls).
func TestConcurrentClients(t *testing.T) {
	s := serve(t, 8, true, nil)
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := postOK(t, s.srv.URL, map[string]any{"model": "tiny", "messages": []map[string]any{{"role": "user", "content": "Say hello in one word."}},
				"max_tokens": 40, "seed": i}, "")
			if c.Usage.CompletionTokens != 40 || c.Choices[0].FinishReason != "length" {
				errs <- "short answer"
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	steps, gen := s.sched.Stats()
	if gen != 8*40 || steps >= gen {
		t.Fatalf("%d tokens in %d decode calls", gen, steps)
	}
}

// A client that goes away mid-stream frees its slot: on a one-slot scheduler
// with no stop ids (so nothing ends the first stream before its 200
// tokens but the disconnect), the client reads two chunks and hangs up;
// the slot is freed well before 200 tokens and a second request is served.
func TestDisconnectFreesSlot(t *testing.T) {
	s := serve(t, 1, true, nil)
	body := `{"model": "tiny", "messages": [{"role": "user", "content": "Say hello in one word."}], "max_tokens": 200, "stream": true}`
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", s.srv.URL+"/v1/chat/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(resp.Body)
	for n := 0; n < 2; {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "data: ") {
			n++
		}
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for s.sched.Busy() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if _, gen := s.sched.Stats(); s.sched.Busy() != 0 || gen >= 200 {
		t.Fatalf("busy %d after the client left, %d tokens generated", s.sched.Busy(), gen)
	}
	c := postOK(t, s.srv.URL, json.RawMessage(strings.Replace(body, `"stream": true`, `"stream": false`, 1)), "")
	if c.Usage.CompletionTokens != 200 {
		t.Fatalf("second request: %+v", c.Usage)
	}
}

// prefillCounter is a decoder that records the slots of each batched
// prefill and counts the prefills of one slot.
type prefillCounter struct {
	torchdecoder.Decoder
	batches [][]int
	single  int
}

func (d *prefillCounter) Prefill(slot int, ids []int64) error {
	d.single++
	return d.Decoder.Prefill(slot, ids)
}

func (d *prefillCounter) PrefillBatch(slots []int, ids [][]int64) error {
	d.batches = append(d.batches, slices.Clone(slots))
	return d.Decoder.PrefillBatch(slots, ids)
}

// Jobs admitted together are prefilled in one batched call: three jobs,
// the second of two choices, queued before the scheduler starts take one
// PrefillBatch of their first slots (0, 1 and 3: slot 2 gets the second
// job's prompt copied) and no prefill of a single slot; each prompt is
// counted once.
func TestJobsPrefillTogether(t *testing.T) {
	m := gatewaytest.Build(t)
	policy := m.Untrained(t, 11)
	prompt, _, err := m.Format.Render([]tokenizer.Message{{Role: "user", Content: "Say hello in one word."}}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	te, err := torch.NewEngine(policy, 4, 256)
	if err != nil {
		t.Fatal(err)
	}
	defer te.Free()
	dec := &prefillCounter{Decoder: torchdecoder.Decoder{Engine: te}}
	sched := gateway.NewScheduler(dec, nil)
	var rs []*gateway.Pending
	for i, n := range []int{1, 2, 1} {
		seeds := []uint64{uint64(i), uint64(i + 10)}[:n]
		r, err := sched.Submit(context.Background(), gateway.Job{Prompt: prompt, N: n, Sampling: decoding.Sampling{Temperature: 1},
			MaxTokens: 3, Seeds: seeds})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	stop := runScheduler(sched)
	for _, r := range rs {
		if err := r.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	if len(dec.batches) != 1 || !slices.Equal(dec.batches[0], []int{0, 1, 3}) || dec.single != 0 {
		t.Fatalf("prefill calls of slots %v and %d of a single slot, want one of [0 1 3] and none", dec.batches, dec.single)
	}
	if got := sched.Prefilled(); got != int64(3*len(prompt)) {
		t.Fatalf("prefilled %d tokens, want %d (3 prompts of %d)", got, 3*len(prompt), len(prompt))
	}
}
