package torch

import (
	"slices"
	"strings"
	"testing"
)

// prefillBatchCase is a batched prefill into slots with different
// histories: slot 2 held a 40-token sequence and was released (its cache
// keeps those stale keys beyond its length 0), slots 0, 1, 4 and 5 hold 5,
// 17, 9 and 1 tokens, slot 3 stays empty. The batch prefills 3, 11, 1, 23
// and 6 tokens into slots 4, 0, 1, 2 and 5: not in slot order, with a run
// of consecutive slots (0, 1, 2) and two single ones, so that short slots
// sit beside padding and beside keys of other lengths.
type prefillBatchCase struct {
	before map[int][]int64
	slots  []int
	ids    [][]int64
}

func newPrefillBatchCase() prefillBatchCase {
	return prefillBatchCase{
		before: map[int][]int64{0: seq(5, 1), 1: seq(17, 2), 4: seq(9, 4), 5: seq(1, 5)},
		slots:  []int{4, 0, 1, 2, 5},
		ids:    [][]int64{seq(3, 21), seq(11, 22), seq(1, 23), seq(23, 24), seq(6, 25)},
	}
}

// setUp gives e the case's histories (slot by slot, with Prefill).
func (c prefillBatchCase) setUp(t *testing.T, e *Engine) {
	t.Helper()
	if err := e.Prefill(2, seq(40, 9)); err != nil {
		t.Fatal(err)
	}
	if err := e.Release(2); err != nil {
		t.Fatal(err)
	}
	for s, ids := range c.before {
		if err := e.Prefill(s, ids); err != nil {
			t.Fatal(err)
		}
	}
}

// history is slot s's whole sequence after the batch.
func (c prefillBatchCase) history(s int) []int64 {
	i := slices.Index(c.slots, s)
	return append(slices.Clone(c.before[s]), c.ids[i]...)
}

// A batched prefill of ragged prompts into slots of different lengths
// gives every slot the pending logits of prefilling it alone, to float
// rounding, and the decode steps after it draw the same tokens with the
// same logprobs (to rounding), on every decode path; so does the batch run
// as several forwards (at most 36 padded tokens each: slots 4, 0 and 1
// together, then 2, then 5). Not bit for bit: on the CPU one product of
// several slots' rows rounds differently from a product of each slot's
// (observed: up to 2.4e-7 in the logits, one float32 ulp in a logprob), so
// the tolerance is 1e-6 (1e-5 on CUDA). Every pending row equals the full
// pass of its slot's history (1e-5 in f32; 1e-4 on CUDA), with attention
// sharpened so that a padded or stale key read by a real query moves the
// logits well past that: padding leaking into attention fails here.
func TestPrefillBatchMatchesSequential(t *testing.T) {
	for name, cfg := range kernelConfigs() {
		t.Run(name, func(t *testing.T) { prefillBatchMatchesSequential(t, cfg) })
	}
}

func prefillBatchMatchesSequential(t *testing.T, cfg Config) {
	dev := parityDevice(t)
	tolFull, tolSeq := 1e-5, 1e-6
	if dev.CUDA {
		tolFull, tolSeq = 1e-4, 1e-5
	}
	m, err := NewRandomModel(cfg, Float32, dev, false, 11)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	withBiases(t, m)
	spreadQKNorms(t, m)
	sharpenAttention(t, m, 12)
	c := newPrefillBatchCase()
	V := cfg.Vocab
	for _, p := range []DecodePath{DecodeKernels, DecodeFused, DecodeUnfused} {
		t.Run(p.String(), func(t *testing.T) {
			seqE, err := NewEngine(m, 6, 128)
			if err != nil {
				t.Fatal(err)
			}
			defer seqE.Free()
			if err := seqE.SetDecodePath(p); err != nil {
				t.Skipf("%v does not run here: %v", p, err)
			}
			batE, chunkE := newEngineOn(t, m, 6, p), newEngineOn(t, m, 6, p)
			defer batE.Free()
			defer chunkE.Free()
			if err := chunkE.setPrefillTokens(36); err != nil {
				t.Fatal(err)
			}
			engines := map[string]*Engine{"batched": batE, "chunked": chunkE}
			c.setUp(t, seqE)
			for i, s := range c.slots {
				if err := seqE.Prefill(s, c.ids[i]); err != nil {
					t.Fatal(err)
				}
			}
			for name, e := range engines {
				c.setUp(t, e)
				if err := e.PrefillBatch(c.slots, c.ids); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for _, s := range c.slots {
					hist := c.history(s)
					if n, _ := e.Len(s); n != len(hist) {
						t.Fatalf("%s: slot %d holds %d tokens after the batch, want %d", name, s, n, len(hist))
					}
					got, _ := e.PendingLogits(s)
					want, _ := seqE.PendingLogits(s)
					d := maxDiff32(got, want)
					t.Logf("%s: slot %d: %.2g from its own prefill", name, s, d)
					if d > tolSeq {
						t.Errorf("%s: slot %d: logits %g from the slot's own prefill", name, s, d)
					}
					full := fullLogits(t, m, hist)[(len(hist)-1)*V:]
					if d := maxDiff32(got, full); d > tolFull {
						t.Errorf("%s: slot %d: logits %g from the full pass of its history", name, s, d)
					}
				}
				if n, _ := e.Len(3); n != 0 {
					t.Errorf("%s: slot 3, not in the batch, holds %d tokens", name, n)
				}
			}
			// The decode steps after it, all five slots together.
			order := []int{0, 1, 2, 4, 5}
			hist := map[int][]int64{}
			for i, s := range order {
				hist[s] = c.history(s)
				for _, e := range []*Engine{seqE, batE, chunkE} {
					e.Seed(s, uint64(60+i))
				}
			}
			for step := 0; step < 6; step++ {
				samp := Sampling{Temperature: 0.7}
				if step%3 == 2 {
					samp = Sampling{}
				}
				tokS, lpS := make([]int64, len(order)), make([]float32, len(order))
				if err := seqE.Step(order, samp, tokS, lpS); err != nil {
					t.Fatal(err)
				}
				for name, e := range engines {
					tok, lp := make([]int64, len(order)), make([]float32, len(order))
					if err := e.Step(order, samp, tok, lp); err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(tok, tokS) || maxDiff32(lp, lpS) > tolSeq {
						t.Fatalf("step %d: after the %s prefill %v drew %v (logprobs %v), after prefills one by one %v (%v)",
							step, name, order, tok, lp, tokS, lpS)
					}
				}
				for j, s := range order {
					hist[s] = append(hist[s], tokS[j])
				}
			}
			for _, s := range order {
				full := fullLogits(t, m, hist[s])[(len(hist[s])-1)*V:]
				for name, e := range engines {
					got, _ := e.PendingLogits(s)
					if d := maxDiff32(got, full); d > tolFull {
						t.Errorf("%s: slot %d after 6 steps: logits %g from the full pass", name, s, d)
					}
				}
			}
		})
	}
}

// A bad batched prefill is refused with an error naming the slot, and
// leaves the engine as it was: every slot's length and pending logits,
// including those of valid slots listed before the bad one.
func TestPrefillBatchErrors(t *testing.T) {
	m, err := NewRandomModel(tinyConfig(), Float32, testDevice(t), false, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	e, err := NewEngine(m, 3, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Free()
	if err := e.Prefill(0, seq(4, 1)); err != nil {
		t.Fatal(err)
	}
	before, _ := e.PendingLogits(0)
	cases := []struct {
		name  string
		slots []int
		ids   [][]int64
		want  string
	}{
		{"no slots", nil, nil, "0 slots and 0 token lists"},
		{"lists", []int{1, 2}, [][]int64{seq(2, 1)}, "2 slots and 1 token lists"},
		{"duplicate", []int{1, 2, 1}, [][]int64{seq(2, 1), seq(2, 2), seq(2, 3)}, "slot 1 given twice"},
		{"empty", []int{1, 2}, [][]int64{seq(2, 1), {}}, "slot 2: no tokens"},
		{"range", []int{1, 3}, [][]int64{seq(2, 1), seq(2, 2)}, "slot 3 out of range [0,3)"},
		{"negative slot", []int{-1}, [][]int64{seq(2, 1)}, "slot -1 out of range"},
		{"cache", []int{1, 0}, [][]int64{seq(3, 1), seq(13, 2)}, "slot 0 would exceed the cache length 16 (has 4, adding 13)"},
		{"vocabulary", []int{1, 2}, [][]int64{seq(3, 1), {5, 97}}, "slot 2: token id 97 (position 1) outside the vocabulary [0,97)"},
		{"negative token", []int{2, 1}, [][]int64{seq(3, 1), {-1}}, "slot 1: token id -1 (position 0) outside the vocabulary"},
	}
	for _, c := range cases {
		err := e.PrefillBatch(c.slots, c.ids)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
		for s, want := range []int{4, 0, 0} {
			if n, _ := e.Len(s); n != want {
				t.Fatalf("%s: slot %d holds %d tokens after the refused batch, want %d", c.name, s, n, want)
			}
		}
		if got, _ := e.PendingLogits(0); !slices.Equal(got, before) {
			t.Fatalf("%s: slot 0's pending logits changed", c.name)
		}
		if err := e.Step([]int{1}, Sampling{}, make([]int64, 1), make([]float32, 1)); err == nil {
			t.Fatalf("%s: slot 1 has something pending after the refused batch", c.name)
		}
	}
}
