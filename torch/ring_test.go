package torch

import (
	"slices"
	"testing"
)

// A sliding-window layer's cache is a ring of its window: the engine's
// cache of each layer of a Gemma 4 (sliding, sliding, full, then two
// kv-shared layers; a window of 4) and of a Qwen2 whose first layer slides
// over 4 holds 4 positions per slot in a sliding layer, MaxLen (64) in a
// full one and none in a kv-shared one. Decoding far past the window gives
// the training forward's logits (its full sequence, every key in view) on
// every path (the kernels of each instruction set where they run: Qwen2,
// kernelConfig's shape), each slot prefilled
// alone and the slots in one batched prefill: prompts of 13, 2 and 7
// tokens, 14 greedy steps, a second prefill of 9 and 3 tokens onto two of
// the slots (crossing the window again inside a prefill whose ring is
// full) beside 5 onto slot 2 released (empty), slot 0 copied onto slot 2,
// then 6 more steps: slot 0 ends at 42 tokens, ten windows. Every pending row within 1e-4 of the forward's.
func TestSlidingCacheRing(t *testing.T) {
	qwen := kernelConfig()
	qwen.Window, qwen.WindowLayers = 4, []bool{true, false}
	for _, k := range []struct {
		name string
		cfg  Config
		want []int
	}{{"gemma4", gemma4TrainConfig(), []int{4, 4, 64, 0, 0}}, {"qwen2", qwen, []int{4, 64}}} {
		t.Run(k.name, func(t *testing.T) {
			m, err := NewRandomModel(k.cfg, Float32, CPU, false, 23)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Free()
			sharpenAttention(t, m, 6)
			for _, p := range []DecodePath{DecodeKernels, DecodeFused, DecodeUnfused} {
				run := func(t *testing.T) {
					for _, batched := range []bool{false, true} {
						ringCase(t, m, p, batched, k.want)
					}
				}
				t.Run(p.String(), func(t *testing.T) {
					if p != DecodeKernels {
						run(t)
						return
					}
					eachISA(t, func(t *testing.T) {
						kernelsOrSkip(t, m)
						run(t)
					})
				})
			}
		})
	}
}

// ringCase runs TestSlidingCacheRing's decode on path p, prefilling the
// slots alone or batched.
func ringCase(t *testing.T, m *Model, p DecodePath, batched bool, want []int) {
	t.Helper()
	e, err := NewEngine(m, 3, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Free()
	if err := e.SetDecodePath(p); err != nil {
		t.Fatal(err)
	}
	if got, err := e.CachePositions(); err != nil || !slices.Equal(got, want) {
		t.Fatalf("cache positions per layer %v (%v), want %v", got, err, want)
	}
	hist := make([][]int64, 3) // each slot's tokens
	var worst float64
	prefill := func(slots []int, ids [][]int64) {
		t.Helper()
		if batched {
			if err := e.PrefillBatch(slots, ids); err != nil {
				t.Fatal(err)
			}
		} else {
			for i, s := range slots {
				if err := e.Prefill(s, ids[i]); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i, s := range slots {
			hist[s] = append(hist[s], ids[i]...)
		}
	}
	check := func(what string) {
		t.Helper()
		for s := range hist {
			got, err := e.PendingLogits(s)
			if err != nil {
				t.Fatal(err)
			}
			V := m.Config.Vocab
			d := maxDiff32(got, fullLogits(t, m, hist[s])[(len(hist[s])-1)*V:])
			worst = max(worst, d)
			if d > 1e-4 {
				t.Fatalf("batched prefill %v, %s: slot %d (%d tokens) differs from the forward by %g", batched, what,
					s, len(hist[s]), d)
			}
		}
	}
	steps := func(n int) {
		t.Helper()
		order := []int{2, 0, 1}
		toks, lps := make([]int64, 3), make([]float32, 3)
		for range n {
			if err := e.Step(order, Sampling{}, toks, lps); err != nil {
				t.Fatal(err)
			}
			for j, s := range order {
				hist[s] = append(hist[s], toks[j])
			}
			check("step")
		}
	}
	prefill([]int{0, 1, 2}, [][]int64{seq(13, 5), seq(2, 6), seq(7, 7)})
	check("prefill")
	steps(14)
	if err := e.Release(2); err != nil {
		t.Fatal(err)
	}
	hist[2] = nil
	prefill([]int{0, 1, 2}, [][]int64{seq(9, 8), seq(3, 9), seq(5, 10)})
	check("second prefill")
	if err := e.CopySlot(0, 2); err != nil {
		t.Fatal(err)
	}
	hist[2] = slices.Clone(hist[0])
	steps(6)
	if n, _ := e.Len(0); n != 42 {
		t.Fatalf("slot 0 holds %d tokens, want 42", n)
	}
	t.Logf("%v, batched prefill %v: logits within %.2g of the forward's", p, batched, worst)
}
