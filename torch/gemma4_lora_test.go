package torch

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// LoRA on Gemma 4 sits on the projections transformers builds, as PEFT
// adapts them: all-linear is q/k/v/o_proj, gate/up/down_proj and the
// per-layer input projections (per_layer_input_gate and
// per_layer_projection on every layer, the model's
// per_layer_model_projection once, its adapter named first); the
// kv-shared layers (3, 4) have no k_proj or v_proj and the
// attention_k_eq_v full layer 2 no v_proj, so k_proj sits on layers 0-2
// and v_proj on 0 and 1 (Config.LoRALayers, and the shim's adapters
// alike). With B drawn, the training forward's unmerged products give the
// merged model's logprobs within 1e-10 in float64 and differ from the
// base's, with all-linear and with the three per-layer input projections
// alone, whose merge in place (MergeFrom, as after each update) gives the
// adapters' logprobs too. (The merged model's export: TestInteropPEFTGemma4.)
func TestGemma4LoRA(t *testing.T) {
	base, err := NewRandomModel(gemma4TrainConfig(), Float64, CPU, false, 29)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Free()
	if err := base.InitRandom(29, 0.2); err != nil {
		t.Fatal(err)
	}
	c := base.Config
	perLayer := []string{"per_layer_input_gate", "per_layer_projection", "per_layer_model_projection"}
	if all := c.AllLinear(); !slices.Equal(all, append([]string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}, perLayer...)) {
		t.Fatalf("all-linear %v", all)
	}
	want := map[string][]int{"q_proj": {0, 1, 2, 3, 4}, "k_proj": {0, 1, 2}, "v_proj": {0, 1}, "o_proj": {0, 1, 2, 3, 4},
		"gate_proj": {0, 1, 2, 3, 4}, "up_proj": {0, 1, 2, 3, 4}, "down_proj": {0, 1, 2, 3, 4},
		"per_layer_input_gate": {0, 1, 2, 3, 4}, "per_layer_projection": {0, 1, 2, 3, 4}, "per_layer_model_projection": nil}
	for tg, ls := range want {
		if got := c.LoRALayers(tg); !slices.Equal(got, ls) {
			t.Errorf("%s on layers %v, want %v", tg, got, ls)
		}
		if !c.HasLoRATarget(tg) {
			t.Errorf("the model has no %s", tg)
		}
	}
	if LoRAModule("per_layer_input_gate") != "per_layer_input_gate" || LoRAModule(ModelLoRATarget) != "" {
		t.Errorf("modules %q, %q", LoRAModule("per_layer_input_gate"), LoRAModule(ModelLoRATarget))
	}
	noPLE := gemma4TrainConfig()
	noPLE.Gemma.PerLayerDim = 0
	if all := noPLE.AllLinear(); slices.ContainsFunc(all, func(t string) bool { return slices.Contains(perLayer, t) }) {
		t.Errorf("all-linear without per-layer inputs %v", all)
	}
	m := newLoRA(t, base, LoRA{Rank: 4, Alpha: 8, Targets: c.AllLinear()}, false)
	defer m.Free()
	names := []string{"base_model.model.model.per_layer_model_projection.lora_A.weight",
		"base_model.model.model.per_layer_model_projection.lora_B.weight"}
	for i := range c.Layers {
		for _, tg := range c.AllLinear() {
			if !slices.Contains(c.LoRALayers(tg), i) {
				continue
			}
			for _, ab := range []string{"A", "B"} {
				names = append(names, fmt.Sprintf("base_model.model.model.layers.%d.%s.lora_%s.weight", i, LoRAModule(tg), ab))
			}
		}
	}
	if !slices.Equal(m.Names(), names) {
		t.Fatalf("adapters %v,\nwant %v", m.Names(), names)
	}
	setRandomB(t, m)
	checkMergedEqualsAdapters(t, m, base, padBatch())
	t.Run("per-layer input projections alone", func(t *testing.T) {
		m := newLoRA(t, base, LoRA{Rank: 2, Alpha: 4, Targets: perLayer}, false)
		defer m.Free()
		if len(m.Names()) != 2*(1+2*c.Layers) {
			t.Fatalf("adapters %v", m.Names())
		}
		stale, err := NewMergedModel(m) // merged while B is zero, then merged again in place
		if err != nil {
			t.Fatal(err)
		}
		defer stale.Free()
		setRandomB(t, m)
		checkMergedEqualsAdapters(t, m, base, padBatch())
		if err := stale.MergeFrom(m); err != nil {
			t.Fatal(err)
		}
		if d := maxDiff64(logprobs64(t, stale, padBatch(), false), logprobs64(t, m, padBatch(), false)); d > 1e-10 {
			t.Errorf("MergeFrom's model and the adapters differ by %g", d)
		}
	})
	t.Run("refused without per-layer inputs", func(t *testing.T) {
		plain, err := NewRandomModel(noPLE, Float32, CPU, false, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Free()
		for _, tg := range perLayer {
			m, err := NewLoRAModel(plain, LoRA{Rank: 2, Alpha: 4, Targets: []string{tg}}, false, 1)
			if err == nil {
				m.Free()
				t.Fatalf("LoRA on %s of a Gemma 4 without per-layer inputs", tg)
			}
			if !strings.Contains(err.Error(), tg) {
				t.Errorf("error %q does not name %s", err, tg)
			}
		}
	})
}

// checkMergedEqualsAdapters checks a LoRA model m over base on batch b
// (a float64 model): its logprobs equal those of its merged weights within 1e-10,
// and its adapters (B drawn) move them from base's by 1e-3 or more.
func checkMergedEqualsAdapters(t *testing.T, m, base *Model, b Batch) {
	t.Helper()
	merged, err := NewMergedModel(m)
	if err != nil {
		t.Fatal(err)
	}
	defer merged.Free()
	adapted, fromMerged, plain := logprobs64(t, m, b, true), logprobs64(t, merged, b, false), logprobs64(t, base, b, false)
	if d := maxDiff64(adapted, fromMerged); d > 1e-10 {
		t.Errorf("the adapters' products and the merged weights differ by %g", d)
	}
	if d := maxDiff64(adapted, plain); d < 1e-3 {
		t.Errorf("the adapters move the logprobs by %g only", d)
	}
}

// logprobs64 is m's training forward's log-probabilities on b, as float64
// (with an autograd graph under grad, which the result does not keep).
func logprobs64(t *testing.T, m *Model, b Batch, grad bool) []float64 {
	t.Helper()
	o, err := m.Forward(b, ForwardOptions{Grad: grad})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Free()
	v, err := o.LogProbs.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
