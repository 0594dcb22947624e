package torch

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
)

// A right-padded batch whose short row ends more than a sliding window
// before the long one (row 1: 110 real tokens and 40 pads, a window of 4,
// rows of 150 that also run in query blocks) trains as each row alone:
// a padding query with no real key in its window (full_mask lets no
// query attend a padding key) attends its own key, not none (a softmax
// over -inf alone, NaN, which the next layer's attention spread to the
// row's real tokens). The real tokens' logprobs equal those of each row
// forwarded by itself, and every parameter's gradient of the sum of the
// real logprobs the sum of the rows' own, in f32, with activation
// checkpointing off and on; every one is finite. The same for a Qwen2
// whose first layer slides over 4 (the same mask).
func TestGemma4PaddingPastWindow(t *testing.T) {
	qwen := tinyConfig()
	qwen.Window, qwen.WindowLayers = 4, []bool{true, false}
	const T, short = 150, 110
	rows := [][]int64{seq(T, 3), seq(short, 4)}
	b := Batch{B: 2, T: T}
	real := make([]float32, 2*(T-1)) // 1 where the pair (t, t+1) is real
	for r, ids := range rows {
		for p := range T {
			id, attn := int64(0), int64(0)
			if p < len(ids) {
				id, attn = ids[p], 1
			}
			b.IDs, b.Attn, b.Positions = append(b.IDs, id), append(b.Attn, attn), append(b.Positions, int64(p))
			if p+1 < len(ids) {
				real[r*(T-1)+p] = 1
			}
		}
	}
	for _, k := range []struct {
		name string
		cfg  Config
		ckpt bool
	}{{"gemma4", gemma4TrainConfig(), false}, {"gemma4/checkpointing", gemma4TrainConfig(), true}, {"qwen2", qwen, false}} {
		ckpt := k.ckpt
		t.Run(k.name, func(t *testing.T) {
			m, err := NewRandomModel(k.cfg, Float32, CPU, false, 17)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Free()
			if err := m.SetCheckpointing(ckpt); err != nil {
				t.Fatal(err)
			}
			lp, grads := maskedLossGrads(t, m, b, real)
			want := map[string][]float64{}
			for r, ids := range rows {
				alone := Batch{B: 1, T: len(ids), IDs: ids, Attn: make([]int64, len(ids)), Positions: make([]int64, len(ids))}
				mask := make([]float32, len(ids)-1)
				for p := range ids {
					alone.Attn[p], alone.Positions[p] = 1, int64(p)
				}
				for p := range mask {
					mask[p] = 1
				}
				wlp, g := maskedLossGrads(t, m, alone, mask)
				for p, w := range wlp {
					if got := lp[r*(T-1)+p]; !(math.Abs(got-w) <= 1e-5) {
						t.Fatalf("row %d position %d: logprob %v, alone %v", r, p, got, w)
					}
				}
				for n, v := range g {
					if want[n] == nil {
						want[n] = make([]float64, len(v))
					}
					for i := range v {
						want[n][i] += v[i]
					}
				}
			}
			for n, w := range want {
				scale := 1.0
				for _, x := range w {
					scale = math.Max(scale, math.Abs(x))
				}
				for i, x := range grads[n] {
					if !(math.Abs(x-w[i]) <= 1e-4*scale) {
						t.Fatalf("%s[%d]: gradient %v, the rows alone %v", n, i, x, w[i])
					}
				}
			}
			if len(grads) != len(want) || len(grads) == 0 {
				t.Errorf("gradients of %d parameters, the rows alone %d", len(grads), len(want))
			}
		})
	}
}

// The same against transformers 5.25: gemma4Small (a window of 8) over
// right-padded rows of 40 and 30 tokens, row 1's padding queries 38 and 39
// on left with no real key in their windows. The training forward's
// logprobs of the real next tokens within 1e-4 of transformers' float64
// forward in f32; L = -mean logprob over the real next-token pairs within
// 1e-5 and every parameter's gradient within 1e-4 of the largest entry of
// transformers' (its autograd), unpacked and packed. transformers' sdpa
// attention is the reference: its eager attention leaves such a query no
// key and its NaN spreads to the whole row, real tokens included, as ours
// did. (The logits of the padding queries themselves are not compared:
// transformers' are its mask convention's, ours a query's own key's;
// neither is read.)
func TestInteropGemma4PaddingPastWindow(t *testing.T) {
	pyinterop.Python(t)
	hm := hfModel{Dir: filepath.Join(t.TempDir(), "gemma4-padded"), Family: "gemma4", Config: gemma4Small(), Style: "5", Seed: 62,
		RefDType: "float64", RefAttn: "sdpa", Full: []int{40, 30}}
	var made hfMade
	pyinterop.Run(t, "testdata/interop/hf_model.py", map[string]any{"models": []hfModel{hm}}, &made)
	m, err := LoadModel(hm.Dir, Float32, CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range loadCases(t, hm.Dir) {
		if c.Kind == "full" {
			t.Logf("%s: training forward logprobs max |diff| %.2e", c.Name, fullCaseLogprobs(t, m, c))
		}
	}
	m.Free()
	full, ref, grads := gradReference(t, hm.Dir, "Gemma4ForCausalLM", "sdpa")
	b := Batch{B: len(full.InputIDs), T: len(full.InputIDs[0]), IDs: flat(full.InputIDs), Attn: flat(full.AttentionMask),
		Positions: flat(full.PositionIDs)}
	for _, packed := range []bool{false, true} {
		m, err := LoadModel(hm.Dir, Float32, CPU, false)
		if err != nil {
			t.Fatal(err)
		}
		loss := shortLoss(t, m, b, full, packed)
		if math.Abs(loss-ref.Loss) > 1e-5 {
			t.Errorf("packed %v: loss %v, transformers %v", packed, loss, ref.Loss)
		}
		d := holdGradients(t, m, grads, 1e-4, true)
		t.Logf("packed %v: loss %.6f (transformers %.6f), gradients max |diff| %.2e", packed, loss, ref.Loss, d)
		m.Free()
	}
}

// maskedLossGrads runs m over b and returns its logprobs [B*(T-1)] and
// the gradients of the sum of those where mask is 1, by parameter name,
// zeroed after.
func maskedLossGrads(t *testing.T, m *Model, b Batch, mask []float32) ([]float64, map[string][]float64) {
	t.Helper()
	s := NewScope()
	defer s.Close()
	o, err := m.Forward(b, ForwardOptions{Grad: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Own(o.LogProbs, o.Values)
	loss := s.Sum(s.Mul(o.LogProbs, s.Float32(mask, int64(b.B), int64(b.T-1))))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	lp, err := o.LogProbs.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return lp, backwardGrads(t, s, m, loss)
}
