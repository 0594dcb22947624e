package torch

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/fixtures"
)

// moeConfigJSON is fixtures.Qwen3MoE30BConfig with the keys of edit set (a nil value
// deletes the key).
func moeConfigJSON(t *testing.T, edit map[string]any) []byte {
	t.Helper()
	var raw map[string]any
	if err := json.Unmarshal([]byte(fixtures.Qwen3MoE30BConfig), &raw); err != nil {
		t.Fatal(err)
	}
	for k, v := range edit {
		if v == nil {
			delete(raw, k)
		} else {
			raw[k] = v
		}
	}
	b, _ := json.Marshal(raw)
	return b
}

// Qwen3-30B-A3B's config reads as published: 128 experts of width 768,
// top-8 normalised, all 48 layers sparse, q/k norms; the parameter count
// of the model it describes is the published 30.5B (every expert counted);
// the defaults are Qwen3MoeConfig's; transformers 5's num_local_experts
// is read and written back under its name; the sparse layers follow
// decoder_sparse_step and mlp_only_layers.
func TestConfigQwen3MoE(t *testing.T) {
	c, err := ParseConfig([]byte(fixtures.Qwen3MoE30BConfig), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	want := MoE{Experts: 128, ExpertsPerToken: 8, Intermediate: 768, NormTopKProb: true, SparseStep: 1,
		MLPOnlyLayers: []int{}, RouterAuxLossCoef: 0.001}
	if c.MoE.Experts != want.Experts || c.MoE.ExpertsPerToken != 8 || c.MoE.Intermediate != 768 || !c.MoE.NormTopKProb ||
		c.MoE.SparseStep != 1 || len(c.MoE.MLPOnlyLayers) != 0 || c.MoE.OutputRouterLogits || c.MoE.RouterAuxLossCoef != 0.001 {
		t.Errorf("moe %+v, want %+v", c.MoE, want)
	}
	if !c.QKNorm() || c.QKVBias() || c.HeadDim != 128 || c.KVHeads != 4 || c.RopeTheta != 1e6 {
		t.Errorf("attention: qk norm %v, qkv bias %v, head_dim %d, kv %d, theta %g", c.QKNorm(), c.QKVBias(), c.HeadDim, c.KVHeads, c.RopeTheta)
	}
	for i := range c.Layers {
		if !c.SparseLayer(i) {
			t.Fatalf("layer %d is dense", i)
		}
	}
	shapes, err := ParamShapes(c, false)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, p := range shapes {
		n += p.Numel()
	}
	// Qwen3-30B-A3B: 30.5B parameters. By hand: embeddings and LM head
	// 2 x 151936 x 2048 = 622.3M; per layer attention 2048 x (4096 + 2 x 512)
	// + 4096 x 2048 = 18.87M, norms 2 x 2048 + 2 x 128, router 128 x 2048 =
	// 0.26M, experts 128 x 3 x 768 x 2048 = 603.98M: 623.11M, x 48 = 29.909B.
	if want := int64(2*151936*2048 + 48*(2048*(4096+2*512)+4096*2048+2*2048+2*128+128*2048+128*3*768*2048) + 2048); n != want {
		t.Errorf("%d parameters, want %d", n, want)
	} else if math.Abs(float64(n)/1e9-30.53) > 0.01 {
		t.Errorf("%d parameters, published 30.5B", n)
	}

	// Defaults: Qwen3MoeConfig's.
	d, err := ParseConfig(moeConfigJSON(t, map[string]any{"num_experts": nil, "num_experts_per_tok": nil,
		"moe_intermediate_size": nil, "norm_topk_prob": nil, "decoder_sparse_step": nil, "mlp_only_layers": nil,
		"router_aux_loss_coef": nil, "num_key_value_heads": nil, "head_dim": nil}), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	if m := d.MoE; m.Experts != 128 || m.ExpertsPerToken != 8 || m.Intermediate != 768 || m.NormTopKProb || m.SparseStep != 1 ||
		m.RouterAuxLossCoef != 0.001 || d.KVHeads != 4 || d.HeadDim != 2048/32 {
		t.Errorf("defaults: %+v, kv %d, head_dim %d", m, d.KVHeads, d.HeadDim)
	}

	// transformers 5 saves the count as num_local_experts.
	l, err := ParseConfig(moeConfigJSON(t, map[string]any{"num_experts": nil, "num_local_experts": 64.0}), "config.json")
	if err != nil || l.MoE.Experts != 64 {
		t.Fatalf("num_local_experts 64: %v, %d experts", err, l.MoE.Experts)
	}
	b, err := l.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	json.Unmarshal(b, &back)
	if _, has := back["num_experts"]; back["num_local_experts"] != 64.0 || has || back["norm_topk_prob"] != true {
		t.Errorf("written back: num_local_experts %v, num_experts %v, norm_topk_prob %v", back["num_local_experts"], back["num_experts"], back["norm_topk_prob"])
	}

	// Layer i is sparse when (i+1) % step == 0 and i is not in
	// mlp_only_layers: with step 2 and [3], of 6 layers 1 and 5.
	s, err := ParseConfig(moeConfigJSON(t, map[string]any{"num_hidden_layers": 6.0, "decoder_sparse_step": 2.0,
		"mlp_only_layers": []any{3.0}}), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	var sparse []int
	for i := range s.Layers {
		if s.SparseLayer(i) {
			sparse = append(sparse, i)
		}
	}
	if !slices.Equal(sparse, []int{1, 5}) {
		t.Errorf("sparse layers %v, want [1 5]", sparse)
	}
	// No experts: every layer dense (transformers' Qwen3MoeMLP).
	if z, err := ParseConfig(moeConfigJSON(t, map[string]any{"num_experts": 0.0}), "config.json"); err != nil || z.Sparse() {
		t.Errorf("num_experts 0: %v, sparse %v", err, z.Sparse())
	}
}

// The keys of a Qwen3 MoE config that would make another model, or none,
// are refused by name.
func TestConfigQwen3MoERefusals(t *testing.T) {
	for _, c := range []struct {
		edit map[string]any
		want string
	}{
		{map[string]any{"num_local_experts": 64.0}, "num_local_experts"},
		{map[string]any{"num_experts_per_tok": 129.0}, "num_experts_per_tok"},
		{map[string]any{"num_experts_per_tok": 0.0}, "num_experts_per_tok"},
		{map[string]any{"decoder_sparse_step": 0.0}, "decoder_sparse_step"},
		{map[string]any{"moe_intermediate_size": 0.0}, "moe_intermediate_size"},
		{map[string]any{"num_experts": 1.5}, "num_experts"},
		{map[string]any{"mlp_only_layers": "1"}, "mlp_only_layers"},
		{map[string]any{"mlp_only_layers": []any{"1"}}, "mlp_only_layers"},
		{map[string]any{"norm_topk_prob": 1.0}, "norm_topk_prob"},
		{map[string]any{"output_router_logits": "true"}, "output_router_logits"},
		{map[string]any{"router_aux_loss_coef": -1.0}, "router_aux_loss_coef"},
		{map[string]any{"num_hidden_layers": 2000.0}, "num_hidden_layers"},
		{map[string]any{"use_sliding_window": true, "sliding_window": 4096.0}, "sliding window"},
		{map[string]any{"attention_bias": true}, "attention_bias"},
		{map[string]any{"architectures": []any{"Qwen3ForCausalLM"}}, "architectures"},
	} {
		_, err := ParseConfig(moeConfigJSON(t, c.edit), "config.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.edit, err, c.want)
		}
	}
}

// moeTiny is a small Qwen3 MoE config: 3 layers (layer 1 dense), 4
// experts, top-2 of normalised probabilities.
func moeTiny() Config {
	return Config{ModelType: "qwen3_moe", Vocab: 97, Hidden: 32, Intermediate: 48, Layers: 3, Heads: 4, KVHeads: 2,
		HeadDim: 16, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 256,
		MoE: MoE{Experts: 4, ExpertsPerToken: 2, Intermediate: 24, NormTopKProb: true, SparseStep: 1, MLPOnlyLayers: []int{1},
			RouterAuxLossCoef: 0.001}}
}

// A Qwen3 MoE with one expert, taken by every token with weight 1, is the
// dense Qwen3 whose MLPs are that expert: the logits of the two agree
// within 1e-5 (only the rounding of the routed sum differs), with and
// without normalised top-k. The dense layer of mlp_only_layers keeps its
// own MLP.
func TestMoEOneExpertIsDense(t *testing.T) {
	dense := Config{ModelType: "qwen3", Vocab: 97, Hidden: 32, Intermediate: 24, Layers: 2, Heads: 4, KVHeads: 2,
		HeadDim: 16, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 256}
	d, err := NewRandomModel(dense, Float32, CPU, false, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Free()
	ids := seq(20, 3)
	want := fullLogits(t, d, ids)
	for _, norm := range []bool{false, true} {
		cfg := dense
		cfg.ModelType = "qwen3_moe"
		cfg.MoE = MoE{Experts: 1, ExpertsPerToken: 1, Intermediate: 24, NormTopKProb: norm, SparseStep: 1, MLPOnlyLayers: []int{1}}
		m, err := NewRandomModel(cfg, Float32, CPU, false, 6)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Free()
		names := m.Names()
		if !slices.Contains(names, "model.layers.0.mlp.experts.0.gate_proj.weight") || !slices.Contains(names, "model.layers.0.mlp.gate.weight") ||
			slices.Contains(names, "model.layers.0.mlp.gate_proj.weight") || !slices.Contains(names, "model.layers.1.mlp.gate_proj.weight") {
			t.Fatalf("names: %v", names)
		}
		for _, n := range d.Names() {
			p, _ := d.Param(n)
			to := n
			if strings.HasPrefix(n, "model.layers.0.mlp.") {
				to = strings.Replace(n, "mlp.", "mlp.experts.0.", 1)
			}
			if err := m.SetParam(to, p); err != nil {
				t.Fatal(err)
			}
			p.Free()
		}
		if diff := maxDiff32(fullLogits(t, m, ids), want); diff > 1e-5 {
			t.Errorf("norm_topk_prob %v: logits differ from the dense model's by %g", norm, diff)
		}
	}
}

// A random Qwen3 MoE decodes on the libtorch paths (fused and unfused;
// the hand-written kernels refuse it, saying why) with the logits of the
// full pass over the tokens so far, several slots at once and a copied
// slot too; the checkpointed training forward gives the plain one's
// logprobs, aux loss and gradients.
func TestMoEDecodeAndCheckpointing(t *testing.T) {
	m, err := NewRandomModel(moeTiny(), Float32, CPU, false, 9)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	sharpenRouters(t, m)
	e0, err := NewEngine(m, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	if p, why, _ := e0.DecodePath(); p == DecodeKernels || !strings.Contains(why, "mixture-of-experts") {
		t.Errorf("decode path %v (%q): want the libtorch path, saying the experts are why", p, why)
	}
	e0.Free()
	V := m.Config.Vocab
	for _, path := range []DecodePath{DecodeFused, DecodeUnfused} {
		e := newEngineOn(t, m, 3, path)
		hist := [][]int64{seq(7, 1), seq(2, 2), nil}
		for s := range 2 {
			if err := e.Prefill(s, hist[s]); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.CopySlot(0, 2); err != nil {
			t.Fatal(err)
		}
		hist[2] = slices.Clone(hist[0])
		for step := range 5 {
			toks, lps := make([]int64, 3), make([]float32, 3)
			if err := e.Step([]int{2, 0, 1}, Sampling{Temperature: 1}, toks, lps); err != nil {
				t.Fatal(err)
			}
			for j, s := range []int{2, 0, 1} {
				hist[s] = append(hist[s], toks[j])
				got, _ := e.PendingLogits(s)
				if d := maxDiff32(got, fullLogits(t, m, hist[s])[(len(hist[s])-1)*V:]); d > 1e-5 {
					t.Fatalf("%v step %d slot %d: logits differ from the full pass by %g", path, step, s, d)
				}
			}
		}
		e.Free()
	}

	b := padBatch()
	run := func(ckpt bool) (lp []float64, aux float64, grads map[string][]float32) {
		if err := m.SetCheckpointing(ckpt); err != nil {
			t.Fatal(err)
		}
		o, err := m.Forward(b, ForwardOptions{Grad: true, RouterAuxLoss: true})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Free()
		lp, _ = o.LogProbs.Float64s()
		aux, _ = o.AuxLoss.Item()
		s := NewScope()
		defer s.Close()
		loss := s.Add(s.Neg(s.Sum(o.LogProbs)), o.AuxLoss)
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		grads = map[string][]float32{}
		for _, n := range m.Names() {
			p, _ := m.Param(n)
			if g, _ := p.Grad(); g != nil {
				grads[n], _ = g.Float32s()
				g.Free()
			}
			p.ZeroGrad()
			p.Free()
		}
		return lp, aux, grads
	}
	lp0, aux0, g0 := run(false)
	lp1, aux1, g1 := run(true)
	if d := maxDiff64(lp0, lp1); d > 1e-6 || math.Abs(aux0-aux1) > 1e-6 {
		t.Errorf("checkpointing: logprobs differ by %g, aux loss %v vs %v", d, aux0, aux1)
	}
	if len(g0) != len(g1) || g0["model.layers.0.mlp.gate.weight"] == nil {
		t.Fatalf("gradients of %d and %d parameters (the router's: %v)", len(g0), len(g1), g0["model.layers.0.mlp.gate.weight"] != nil)
	}
	for n, g := range g0 {
		if d := maxDiff32(g, g1[n]); d > 1e-5 {
			t.Errorf("checkpointing: gradient of %s differs by %g", n, d)
		}
	}
}

// sharpenRouters scales every router by 10, so that tokens choose their
// experts by wide margins (a near tie would let rounding pick another
// expert between two passes that should agree).
func sharpenRouters(t *testing.T, m *Model) {
	editParams(t, m, []string{"mlp.gate.weight"}, func(_ int, vals []float32) {
		for i := range vals {
			vals[i] *= 10
		}
	})
}

func maxDiff64(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(a[i]-b[i]))
	}
	return d
}

// LoRA on a model with mixture-of-experts layers: the attention's
// projections take adapters (the adapters' gradients flow, the merged
// model decodes as the LoRA model computes); the MLP targets are refused,
// naming the experts.
func TestMoELoRA(t *testing.T) {
	base, err := NewRandomModel(moeTiny(), Float32, CPU, false, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Free()
	if _, err := NewLoRAModel(base, LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "gate_proj"}}, false, 1); err == nil ||
		!strings.Contains(err.Error(), "mlp.experts") {
		t.Errorf("LoRA on gate_proj of a MoE model: %v, want a refusal naming the experts", err)
	}
	l := newLoRA(t, base, LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "k_proj", "v_proj", "o_proj"}}, false)
	defer l.Free()
	setRandomB(t, l)
	g := lossGrads(t, l, padBatch())
	if len(g) == 0 {
		t.Fatal("no adapter gradients")
	}
	merged, err := NewMergedModel(l)
	if err != nil {
		t.Fatal(err)
	}
	defer merged.Free()
	e := newEngineOn(t, merged, 1, DecodeFused)
	defer e.Free()
	decodeAgainst(t, e, l, seq(6, 8), 4)
}
