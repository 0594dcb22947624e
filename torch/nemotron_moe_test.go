package torch

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
	"github.com/agentrl/agentrl/torch/safetensors"
)

// nemotronNano is Nemotron 3 Nano 30B-A3B's config (NemotronHConfig's
// arguments) reduced to the opening period of its layer pattern,
// MEMEM*E (Mamba-2, moe, Mamba-2, moe, Mamba-2, attention, moe), with its
// router as published (128 experts, 6 per token, one group, normalised
// weights times routed_scaling_factor 2.5, a shared expert of twice an
// expert's width) and the widths reduced so that transformers' float64
// forward and autograd stay within a loaded CPU's seconds: hidden 64
// (2688 in the checkpoint), experts of 32 (1856), Mamba-2 8 heads of 8
// (64 of 64) in 2 groups (8) with a state of 16 (128), attention 4 heads
// of 16 (32 of 128; 2 key/value heads as there).
func nemotronNano() map[string]any {
	c := nemotronSmall()
	c["layers_block_type"] = []string{MambaBlock, MoEBlock, MambaBlock, MoEBlock, MambaBlock, AttentionBlock, MoEBlock}
	for k, v := range map[string]any{"n_routed_experts": 128, "num_experts_per_tok": 6, "moe_intermediate_size": 32,
		"moe_shared_expert_intermediate_size": 64, "n_group": 1, "topk_group": 1, "routed_scaling_factor": 2.5,
		"norm_topk_prob": true} {
		c[k] = v
	}
	return c
}

// nemotronLatent is a Nemotron-H with what the Nano leaves out of its
// router and experts: the latent projection (moe_latent_size 32 of hidden
// 64: fc1_latent_proj, fc2_latent_proj around the experts), group-limited
// choice (16 experts in 4 groups, a token's 4 experts from its 2 best
// groups) and weights neither normalised nor scaled; pattern ME*E.
func nemotronLatent() map[string]any {
	c := nemotronSmall()
	c["layers_block_type"] = []string{MambaBlock, MoEBlock, AttentionBlock, MoEBlock}
	for k, v := range map[string]any{"n_routed_experts": 16, "num_experts_per_tok": 4, "moe_intermediate_size": 48,
		"moe_shared_expert_intermediate_size": 32, "moe_latent_size": 32, "n_group": 4, "topk_group": 2,
		"routed_scaling_factor": 1.0, "norm_topk_prob": false} {
		c[k] = v
	}
	return c
}

// Nemotron-H models with moe blocks made and saved by transformers 5.25
// (per-expert keys under backbone.*) load, and their logits over rows of
// 150, 67 and 3 tokens, the training forward's logprobs, and greedy
// decoding from prefixes of 70, 1 and 9 tokens on both libtorch decode
// paths equal transformers' float64 forward and generate (its eager expert
// loop; the router in float32, as transformers keeps it) within 1e-4 in
// f32; then the gradient of every parameter (router, experts, shared
// expert, latent projections) of the short loss against transformers'
// autograd, unpacked and packed, with and without checkpointing, and
// agentrl's export loaded back by transformers.
func TestInteropNemotronHMoE(t *testing.T) {
	pyinterop.Python(t)
	root := t.TempDir()
	models := []hfModel{
		{Dir: filepath.Join(root, "nano"), Family: "nemotron_h", Config: nemotronNano(), Style: "5", Seed: 61,
			RefDType: "float64", Full: []int{150, 67, 3}, Explicit: true, Decode: []int{70, 1, 9}, Steps: 6},
		{Dir: filepath.Join(root, "latent"), Family: "nemotron_h", Config: nemotronLatent(), Style: "5", Seed: 62,
			RefDType: "float64", Full: []int{150, 67, 3}, Decode: []int{70, 1, 9}, Steps: 6},
	}
	var made hfMade
	pyinterop.Run(t, "testdata/interop/hf_model.py", map[string]any{"models": models}, &made)
	t.Logf("made with transformers %s, torch %s", made.Transformers, made.Torch)
	for _, hm := range models {
		t.Run(filepath.Base(hm.Dir), func(t *testing.T) {
			for check, d := range fixtureParity(t, hm.Dir) {
				t.Logf("| nemotron_h moe %s | %s | %.1e |", filepath.Base(hm.Dir), check, d)
			}
			nemotronTraining(t, hm.Dir)
		})
	}
}

// nemotronMoEConfig is a small Nemotron-H with moe blocks for tests
// without transformers: 8 experts in 2 groups, 2 per token from the
// better group, a latent of 16.
func nemotronMoEConfig() Config {
	c := nemotronConfig()
	c.Nemotron.Blocks = []string{MambaBlock, MoEBlock, AttentionBlock, MoEBlock}
	c.Layers = 4
	c.MoE = MoE{Experts: 8, ExpertsPerToken: 2, Intermediate: 16, SharedIntermediate: 24, NormTopKProb: true,
		SparseStep: 1, Groups: 2, TopKGroup: 1, Scaling: 1.5, Latent: 16}
	return c
}

// Routing replay on Nemotron-H's moe blocks: the training forward records
// each token's experts per moe block; replaying them gives its logprobs
// again, and replaying other experts (each shifted by one) other logprobs,
// with a gradient still reaching the router (weights by the router's
// scores of the replayed experts).
func TestNemotronHRoutingReplay(t *testing.T) {
	m, err := NewRandomModel(nemotronMoEConfig(), Float32, CPU, false, 9)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if err := m.InitRandom(9, 0.2); err != nil {
		t.Fatal(err)
	}
	b := routingBatch()
	lp, rec := routedForward(t, m, b, ForwardOptions{})
	if rec == nil || rec.Layers != 2 || rec.K != 2 || len(rec.Experts) != b.B*b.T*2*2 {
		t.Fatalf("recorded routing %+v, want 2 layers of 2 experts per token", rec)
	}
	again, _ := routedForward(t, m, b, ForwardOptions{ReplayRouting: rec})
	if d := realDiff(b, lp, again); d > 1e-6 {
		t.Errorf("replaying the forward's own routing changes its logprobs by %g", d)
	}
	shifted := &Routing{Layers: rec.Layers, K: rec.K, Experts: make([]int16, len(rec.Experts))}
	for i, e := range rec.Experts {
		shifted.Experts[i] = (e + 1) % 8
	}
	other, _ := routedForward(t, m, b, ForwardOptions{ReplayRouting: shifted})
	if d := realDiff(b, lp, other); d < 1e-3 {
		t.Errorf("replaying other experts moves the logprobs by %g only", d)
	}
	g := routerGrad(t, m, b, ForwardOptions{Grad: true, ReplayRouting: shifted}, "the router under replay")
	defer g.Free()
	v, _ := g.Float32s()
	if slices.Max(v) == 0 && slices.Min(v) == 0 {
		t.Fatal("the router's gradient under replay is zero")
	}
}

// The engine records a Nemotron-H slot's routing, prefilled and decoded
// tokens alike, as the training forward over the slot's tokens routes
// them, on both libtorch decode paths.
func TestNemotronHEngineRoutingRecord(t *testing.T) {
	m, err := NewRandomModel(nemotronMoEConfig(), Float32, CPU, false, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if err := m.InitRandom(4, 0.2); err != nil {
		t.Fatal(err)
	}
	for _, path := range []DecodePath{DecodeFused, DecodeUnfused} {
		e := newEngineOn(t, m, 2, path)
		if err := e.SetRecordRouting(true); err != nil {
			t.Fatal(err)
		}
		hist := [][]int64{seq(7, 1), seq(12, 2)}
		if err := e.PrefillBatch([]int{0, 1}, hist); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			toks, lps := make([]int64, 2), make([]float32, 2)
			if err := e.Step([]int{0, 1}, Sampling{Temperature: 1}, toks, lps); err != nil {
				t.Fatal(err)
			}
			for s := range hist {
				hist[s] = append(hist[s], toks[s])
			}
		}
		for s, ids := range hist {
			got, err := e.Routing(s)
			if err != nil {
				t.Fatal(err)
			}
			_, want := routedForward(t, m, rowBatch(ids), ForwardOptions{})
			if !slices.Equal(sortedChoices(got), sortedChoices(want)) {
				t.Errorf("%v slot %d: the engine recorded %v, the forward routes %v", path, s, got.Experts, want.Experts)
			}
		}
		e.Free()
	}
}

// A bf16 Nemotron-H model keeps its routers' weights and
// e_score_correction_bias in float32, as transformers does
// (_keep_in_fp32_modules_strict), so the float32 routing reads the values
// the checkpoint holds rather than their bf16 roundings (a bias of 1e-3 x
// (1 + e/3) rounds to bf16 by up to 6.9e-6, enough to flip a near tie); a
// bf16 save writes them as float32 and every other tensor as bf16.
func TestNemotronHRouterFloat32InBF16(t *testing.T) {
	m, err := NewRandomModel(nemotronMoEConfig(), Float32, CPU, false, 9)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if err := m.InitRandom(9, 0.2); err != nil {
		t.Fatal(err)
	}
	bias := make([]float32, 8)
	for e := range bias {
		bias[e] = 1e-3 * (1 + float32(e)/3)
	}
	bt, err := FromFloat32(bias, 8)
	if err != nil {
		t.Fatal(err)
	}
	err = m.SetParam("model.layers.1.mixer.gate.e_score_correction_bias", bt)
	bt.Free()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	m16, err := LoadModel(dir, BFloat16, CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m16.Free()
	values := func(m *Model, name string) ([]float32, DType) {
		t.Helper()
		p, err := m.Param(name)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Free()
		v, err := p.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		return v, p.DType()
	}
	for _, name := range []string{"model.layers.1.mixer.gate.weight", "model.layers.1.mixer.gate.e_score_correction_bias",
		"model.layers.3.mixer.gate.weight"} {
		want, _ := values(m, name)
		got, dt := values(m16, name)
		if dt != Float32 || !slices.Equal(got, want) {
			t.Errorf("%s in the bf16 model: %s, equal to the checkpoint's float32 values: %v", name, dt, slices.Equal(got, want))
		}
	}
	if _, dt := values(m16, "model.layers.1.mixer.shared_experts.up_proj.weight"); dt != BFloat16 {
		t.Errorf("the shared expert's weight is %s in the bf16 model, want bf16", dt)
	}
	out := t.TempDir()
	if err := m16.Save(out); err != nil {
		t.Fatal(err)
	}
	r, err := safetensors.Open(filepath.Join(out, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for name, want := range map[string]safetensors.DType{"backbone.layers.1.mixer.gate.weight": safetensors.F32,
		"backbone.layers.1.mixer.gate.e_score_correction_bias":  safetensors.F32,
		"backbone.layers.1.mixer.shared_experts.up_proj.weight": safetensors.BF16} {
		if info, ok := r.Info(name); !ok || info.DType != want {
			t.Errorf("saved %s: %+v (found %v), want %v", name, info, ok, want)
		}
	}
	if err := CheckWeightsIfPresent(out, m16.Config); err != nil {
		t.Errorf("the bf16 save's weights: %v", err)
	}
	back, err := LoadModel(out, BFloat16, CPU, false)
	if err != nil {
		t.Fatalf("the bf16 save does not load: %v", err)
	}
	defer back.Free()
	if got, dt := values(back, "model.layers.1.mixer.gate.e_score_correction_bias"); dt != Float32 || !slices.Equal(got, bias) {
		t.Errorf("the bias read back from the bf16 save: %s %v, want float32 %v", dt, got, bias)
	}
	// The bf16 model routes, and the float32 router takes a float32 gradient.
	g := routerGrad(t, m16, routingBatch(), ForwardOptions{Grad: true, RecordRouting: true}, "the float32 router")
	defer g.Free()
	if g.DType() != Float32 {
		t.Errorf("the router's gradient is %s, want float32", g.DType())
	}
}

// routerGrad runs m's forward on b with opt, the backward pass of minus
// the sum of its logprobs, and returns layer 1's router weight gradient
// (the caller frees it); none fails the test, naming what.
func routerGrad(t *testing.T, m *Model, b Batch, opt ForwardOptions, what string) *Tensor {
	t.Helper()
	o, err := m.Forward(b, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Free()
	s := NewScope()
	defer s.Close()
	loss := s.Neg(s.Sum(o.LogProbs))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	p, err := m.Param("model.layers.1.mixer.gate.weight")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	g, err := p.Grad()
	if err != nil || g == nil {
		t.Fatalf("no gradient reaches %s (%v)", what, err)
	}
	return g
}
