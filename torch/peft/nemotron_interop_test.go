package peft

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
	"github.com/agentrl/agentrl/torch"
)

// nemotronBase is a random Nemotron-H (Mamba-2, MLP, Mamba-2, attention,
// MLP) in f32, saved as agentrl saves it (backbone.* keys), for PEFT to
// load with transformers.
func nemotronBase(t *testing.T, seed uint64) (*torch.Model, string) {
	t.Helper()
	c := torch.Config{ModelType: torch.NemotronH, Vocab: 101, Hidden: 32, Intermediate: 48, Layers: 5, Heads: 4, KVHeads: 2,
		HeadDim: 8, RMSEps: 1e-5, RopeTheta: 10000, MaxPositions: 256, TorchDType: "float32",
		Nemotron: torch.Nemotron{Blocks: []string{torch.MambaBlock, torch.MLPBlock, torch.MambaBlock, torch.AttentionBlock, torch.MLPBlock},
			Heads: 4, HeadDim: 8, Groups: 2, State: 8, ConvKernel: 4, Chunk: 16, ConvBias: true, DtMax: math.Inf(1)}}
	return savedBase(t, c, seed)
}

// Adapters on a Nemotron-H's mixer.* projections through Hugging Face
// PEFT, both ways, against PEFT's float64 forward within 1e-4 over 40
// tokens (the chunked Mamba-2 scan over three chunks of 16):
//   - agentrl's adapter folder with all-linear (the Mamba-2 layers'
//     in_proj, the attention's q/k/v/o_proj, the MLPs' up_proj
//     and down_proj), every matrix drawn, loads with
//     PeftModel.from_pretrained with agentrl's logits, and the gradients
//     of its adapters of L = -mean logprob are PEFT's autograd's;
//   - an adapter PEFT made on those seven projections loads in agentrl
//     with PEFT's logits. (PEFT's own all-linear adds out_proj, which
//     PEFT then refuses on a Mamba-based model, as agentrl does.)
func TestInteropPEFTNemotronH(t *testing.T) {
	pyinterop.Python(t)
	base, baseDir := nemotronBase(t, 6)
	root := t.TempDir()
	ids, ours, oursDir := savedAllLinear(t, base, baseDir, root, 40)
	grads := filepath.Join(root, "grads.safetensors")
	peftDir := filepath.Join(root, "load", "seven")
	jobs := []peftJob{{Base: baseDir, Adapter: oursDir, Logits: true, Grads: grads},
		{Base: baseDir, Adapter: peftDir, Make: map[string]any{"target_modules": base.Config.AllLinear(), "r": 8, "lora_alpha": 8}, Seed: 41, Logits: true}}
	var ans struct {
		Jobs []peftAnswer `json:"jobs"`
		PEFT string       `json:"peft"`
	}
	pyinterop.Run(t, "testdata/interop/peft_adapters.py", map[string]any{"ids": ids, "jobs": jobs}, &ans)
	t.Logf("PEFT %s", ans.PEFT)
	t.Run("agentrl to PEFT", func(t *testing.T) {
		d, moved := compare(logitsOf(t, ours, ids), ans.Jobs[0])
		t.Logf("| agentrl adapter on a Nemotron-H (all-linear, r=4) | PeftModel.from_pretrained | logits | %.1e |", d)
		if d > 1e-4 || moved < 1e-2 {
			t.Fatalf("PEFT's logits of agentrl's adapter differ from agentrl's by %g (the adapters move PEFT's by %g)", d, moved)
		}
	})
	t.Run("gradients against PEFT", func(t *testing.T) {
		loss, worst := adapterGrads(t, ours, ids, grads)
		t.Logf("loss %.6f (PEFT %.6f); adapter gradients: max |diff| %.2e", loss, ans.Jobs[0].Loss, worst)
		if math.Abs(loss-ans.Jobs[0].Loss) > 1e-5 {
			t.Errorf("loss %v, PEFT's %v", loss, ans.Jobs[0].Loss)
		}
	})
	t.Run("peft seven targets", func(t *testing.T) {
		a := ans.Jobs[1]
		m, err := Load(peftDir, base, false, 0)
		if err != nil {
			t.Fatalf("agentrl refuses PEFT's adapter (config %v): %v", a.AdapterConfig, err)
		}
		defer m.Free()
		d, moved := compare(logitsOf(t, m, ids), a)
		t.Logf("| peft 7 targets r=8 (Nemotron-H) | peft.Load | logits | %.1e |", d)
		if d > 1e-4 || moved < 1e-2 {
			t.Fatalf("agentrl's logits of PEFT's adapter differ from PEFT's by %g (the adapters move PEFT's by %g)", d, moved)
		}
	})
}
