package torch

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
)

// Sliding-window attention on Qwen2 and Qwen3 models transformers 5.25 made
// and saved: Qwen2 with use_sliding_window and max_window_layers 1 (its
// second layer slides) and Qwen3 with layer_types naming the sliding
// layer, each with a window of 8 over rows of 40, 35 and 33 tokens.
// Logits and the training forward's logprobs (with activation
// checkpointing) against transformers' float64 forward within 1e-4 in
// f32, right-padded and with explicit position ids (the window counts
// indices, as transformers' mask does); the gradients of -mean logprob
// against its autograd, unpacked and packed. The decode engine on every
// path (the hand-written kernels where they run, fused, unfused), each row
// prefilled alone and the rows in two batched prefills: transformers'
// greedy generate over prefixes of 20, 1 and 13 tokens and 12 steps (the
// window crossed in prefill and while decoding), the tokens equal and
// every logit within 1e-4 of its float64 one.
func TestInteropSlidingWindow(t *testing.T) {
	pyinterop.Python(t)
	root := t.TempDir()
	q2 := smallShapes("qwen2")
	q2["use_sliding_window"], q2["sliding_window"], q2["max_window_layers"] = true, 8, 1
	q3 := smallShapes("qwen3")
	q3["use_sliding_window"], q3["sliding_window"] = true, 8
	q3["layer_types"] = []string{SlidingAttention, FullAttention}
	var models []hfModel
	names := []string{"qwen2-sliding", "qwen3-sliding"}
	for i, c := range []map[string]any{q2, q3} {
		models = append(models, hfModel{Dir: filepath.Join(root, names[i]), Family: strings.Split(names[i], "-")[0], Config: c,
			Style: "5", Seed: 70 + i, RefDType: "float64", Full: []int{40, 35, 33}, Explicit: true,
			Decode: []int{20, 1, 13}, Steps: 12})
	}
	var made hfMade
	pyinterop.Run(t, "testdata/interop/hf_model.py", map[string]any{"models": models}, &made)
	for i, hm := range models {
		t.Run(names[i], func(t *testing.T) {
			m, err := LoadModel(hm.Dir, Float32, CPU, false)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Free()
			if m.Config.Window != 8 {
				t.Fatalf("window %d, want 8", m.Config.Window)
			}
			var full, decode fixtureCase
			for _, c := range loadCases(t, hm.Dir) {
				if c.Kind == "decode" {
					decode = c
					continue
				}
				t.Logf("%s: logits max |diff| %.2e, training forward logprobs %.2e", c.Name, fullCaseLogits(t, m, c),
					fullCaseLogprobs(t, m, c))
				if c.Name == "right_padded" {
					full = c
				}
			}
			decodePaths(t, m, decode)
			grads := filepath.Join(t.TempDir(), "grads.safetensors")
			export := filepath.Join(t.TempDir(), "export")
			if err := m.Save(export); err != nil {
				t.Fatal(err)
			}
			var ref gradChecked
			pyinterop.Run(t, "testdata/interop/grad_check.py", map[string]any{"dir": hm.Dir, "ids": full.InputIDs,
				"mask": full.AttentionMask, "grads": grads, "export": export}, &ref)
			if ref.ExportMaxDiff != 0 || ref.ExportLogitsMaxDiff != 0 {
				t.Errorf("the export differs from the folder in transformers: parameters by %g, logits by %g", ref.ExportMaxDiff, ref.ExportLogitsMaxDiff)
			}
			b := Batch{B: len(full.InputIDs), T: len(full.InputIDs[0]), IDs: flat(full.InputIDs), Attn: flat(full.AttentionMask),
				Positions: flat(full.PositionIDs)}
			for _, packed := range []bool{false, true} {
				g, err := LoadModel(hm.Dir, Float32, CPU, false)
				if err != nil {
					t.Fatal(err)
				}
				loss := shortLoss(t, g, b, full, packed)
				if math.Abs(loss-ref.Loss) > 1e-5 {
					t.Errorf("packed %v: loss %v, transformers %v", packed, loss, ref.Loss)
				}
				t.Logf("packed %v: loss %.6f (transformers %.6f), gradients max |diff| %.2e", packed, loss, ref.Loss,
					holdGradients(t, g, grads, 1e-4, false))
				g.Free()
			}
		})
	}
}

// decodePaths holds the greedy decode case c through the engine on every
// path (the kernels where they run on this machine and model), each row
// prefilled alone and in batched prefills, to its fixture (decodeCase).
func decodePaths(t *testing.T, m *Model, c fixtureCase) {
	t.Helper()
	for _, p := range []DecodePath{DecodeKernels, DecodeFused, DecodeUnfused} {
		t.Run(p.String(), func(t *testing.T) {
			if p == DecodeKernels {
				kernelsOrSkip(t, m)
			}
			for _, batched := range []bool{false, true} {
				t.Logf("batched prefill %v: logits max |diff| %.2e", batched, decodeCase(t, m, c, p, batched))
			}
		})
	}
}
