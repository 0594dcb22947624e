package peft

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
	"github.com/agentrl/agentrl/torch"
)

// gemma4Base is a random Gemma 4 text model in f32 (sliding, sliding,
// full, sliding, full; layers 3 and 4 kv-shared; full layers with
// attention_k_eq_v; per-layer inputs; a window of 8 that 40 tokens cross;
// logits capped), saved as agentrl saves it (Gemma4ForCausalLM), for PEFT
// to load with transformers.
func gemma4Base(t *testing.T, seed uint64) (*torch.Model, string) {
	t.Helper()
	s, f := torch.SlidingAttention, torch.FullAttention
	c := torch.Config{ModelType: "gemma4_text", Vocab: 101, Hidden: 32, Intermediate: 40, Layers: 5, Heads: 4, KVHeads: 2,
		HeadDim: 8, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 256, BOS: 2, EOS: 1, TorchDType: "float32",
		LayerTypes: []string{s, s, f, s, f},
		Gemma: &torch.Gemma4{SlidingWindow: 8, GlobalHeadDim: 16, GlobalKVHeads: 1, KEqV: true, KVSharedLayers: 2,
			DoubleWideMLP: true, PerLayerDim: 8, PerLayerVocab: 101, FinalSoftcap: 3, GlobalRope: "proportional",
			GlobalTheta: 1e6, GlobalPartial: 0.25}}
	return savedBase(t, c, seed)
}

// Adapters on a Gemma 4's projections through Hugging Face PEFT (on
// transformers' Gemma4ForCausalLM), both ways, against PEFT's float64
// forward within 1e-4 over 40 tokens:
//   - agentrl's adapter folder with all-linear (q/k/v/o_proj, gate/up/
//     down_proj; no k_proj or v_proj on the kv-shared layers, no v_proj
//     on the k_eq_v full layers: transformers builds none there; and the
//     per-layer input projections per_layer_input_gate,
//     per_layer_projection and the model's per_layer_model_projection),
//     every matrix drawn, loads with PeftModel.from_pretrained with
//     agentrl's logits; the gradients of its adapters of L = -mean
//     logprob are PEFT's autograd's, PEFT holding as many adapter
//     matrices, with activation checkpointing off and on; the merged
//     model agentrl exports (NewMergedModel, saved, loaded back) gives
//     PEFT's logits;
//   - an adapter PEFT made on the seven attention and MLP names loads in
//     agentrl with PEFT's logits (PEFT put its adapters on the layers
//     agentrl does);
//   - an adapter PEFT made with its own all-linear (target_modules the
//     string) loads in agentrl as agentrl's all-linear, with PEFT's
//     logits.
func TestInteropPEFTGemma4(t *testing.T) {
	pyinterop.Python(t)
	base, baseDir := gemma4Base(t, 7)
	root := t.TempDir()
	ids, ours, oursDir := savedAllLinear(t, base, baseDir, root, 40)
	grads := filepath.Join(root, "grads.safetensors")
	seven := filepath.Join(root, "load", "seven")
	all := filepath.Join(root, "load", "all-linear")
	sevenNames := []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
	if got := base.Config.AllLinear(); !slices.Equal(got, append(slices.Clone(sevenNames), "per_layer_input_gate",
		"per_layer_projection", "per_layer_model_projection")) {
		t.Fatalf("all-linear %v", got)
	}
	jobs := []peftJob{{Base: baseDir, Adapter: oursDir, Logits: true, Grads: grads},
		{Base: baseDir, Adapter: seven, Make: map[string]any{"target_modules": sevenNames, "r": 8, "lora_alpha": 8}, Seed: 41, Logits: true},
		{Base: baseDir, Adapter: all, Make: map[string]any{"target_modules": "all-linear", "r": 4, "lora_alpha": 4}, Seed: 42, Logits: true}}
	var ans struct {
		Jobs []peftAnswer `json:"jobs"`
		PEFT string       `json:"peft"`
	}
	pyinterop.Run(t, "testdata/interop/peft_adapters.py", map[string]any{"ids": ids, "jobs": jobs}, &ans)
	t.Logf("PEFT %s", ans.PEFT)
	t.Run("agentrl to PEFT", func(t *testing.T) {
		d, moved := compare(logitsOf(t, ours, ids), ans.Jobs[0])
		t.Logf("| agentrl adapter on a Gemma 4 (all-linear, r=4) | PeftModel.from_pretrained | logits | %.1e |", d)
		if d > 1e-4 || moved < 1e-2 {
			t.Fatalf("PEFT's logits of agentrl's adapter differ from agentrl's by %g (the adapters move PEFT's by %g)", d, moved)
		}
	})
	for _, ckpt := range []bool{false, true} {
		t.Run(map[bool]string{false: "gradients against PEFT", true: "gradients against PEFT/checkpointing"}[ckpt], func(t *testing.T) {
			if err := ours.SetCheckpointing(ckpt); err != nil {
				t.Fatal(err)
			}
			defer ours.SetCheckpointing(false)
			for _, n := range ours.Names() { // (the other run's gradients zeroed)
				p, err := ours.Param(n)
				if err != nil {
					t.Fatal(err)
				}
				err = p.ZeroGrad()
				p.Free()
				if err != nil {
					t.Fatal(err)
				}
			}
			loss, worst := adapterGrads(t, ours, ids, grads)
			t.Logf("loss %.6f (PEFT %.6f); adapter gradients: max |diff| %.2e", loss, ans.Jobs[0].Loss, worst)
			if math.Abs(loss-ans.Jobs[0].Loss) > 1e-5 {
				t.Errorf("loss %v, PEFT's %v", loss, ans.Jobs[0].Loss)
			}
		})
	}
	t.Run("merged export", func(t *testing.T) {
		merged, err := torch.NewMergedModel(ours)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(root, "merged")
		err = merged.Save(dir)
		merged.Free()
		if err != nil {
			t.Fatal(err)
		}
		back, err := torch.LoadModel(dir, torch.Float32, torch.CPU, false)
		if err != nil {
			t.Fatal(err)
		}
		defer back.Free()
		d, _ := compare(logitsOf(t, back, ids), ans.Jobs[0])
		t.Logf("| agentrl merged export (Gemma 4) | torch.LoadModel | logits | %.1e |", d)
		if d > 1e-4 {
			t.Fatalf("the merged export's logits differ from PEFT's of the adapter by %g", d)
		}
	})
	t.Run("peft seven targets", func(t *testing.T) {
		a := ans.Jobs[1]
		m, err := Load(seven, base, false, 0)
		if err != nil {
			t.Fatalf("agentrl refuses PEFT's adapter (config %v): %v", a.AdapterConfig, err)
		}
		defer m.Free()
		d, moved := compare(logitsOf(t, m, ids), a)
		t.Logf("| peft 7 targets r=8 (Gemma 4) | peft.Load | logits | %.1e |", d)
		if d > 1e-4 || moved < 1e-2 {
			t.Fatalf("agentrl's logits of PEFT's adapter differ from PEFT's by %g (the adapters move PEFT's by %g)", d, moved)
		}
	})
	t.Run("peft all-linear", func(t *testing.T) {
		a := ans.Jobs[2]
		m, err := Load(all, base, false, 0)
		if err != nil {
			t.Fatalf("agentrl refuses PEFT's all-linear adapter (config %v): %v", a.AdapterConfig, err)
		}
		defer m.Free()
		if got := m.LoRA().Targets; !slices.Equal(got, base.Config.AllLinear()) {
			t.Errorf("PEFT's all-linear (target_modules %v) loads as %v, agentrl's all-linear is %v", a.AdapterConfig["target_modules"], got, base.Config.AllLinear())
		}
		if len(m.Names()) != len(ours.Names()) {
			t.Errorf("PEFT's all-linear has %d adapter matrices, agentrl's %d", len(m.Names()), len(ours.Names()))
		}
		d, moved := compare(logitsOf(t, m, ids), a)
		t.Logf("| peft all-linear r=4 (Gemma 4, per-layer input projections included) | peft.Load | logits | %.1e |", d)
		if d > 1e-4 || moved < 1e-2 {
			t.Fatalf("agentrl's logits of PEFT's all-linear adapter differ from PEFT's by %g (the adapters move PEFT's by %g)", d, moved)
		}
	})
}
