package torch

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/fixtures"
	"github.com/agentrl/agentrl/internal/pyinterop"
	"github.com/agentrl/agentrl/torch/safetensors"
)

// qwen35MoESmall is a small Qwen3.5 MoE text config
// (Qwen3_5MoeTextConfig's arguments): qwen35Small's hybrid stack (three
// Gated DeltaNet layers and a gated attention layer) with every MLP
// sparse, 8 experts of width 32, top-4, and a shared expert of width 48.
func qwen35MoESmall() map[string]any {
	c := qwen35Small()
	delete(c, "intermediate_size")
	c["num_experts"], c["num_experts_per_tok"] = 8, 4
	c["moe_intermediate_size"], c["shared_expert_intermediate_size"] = 32, 48
	c["router_aux_loss_coef"] = 0.01
	return c
}

// Qwen3.5 MoE models made by transformers 5.24: the text model alone
// (Qwen3_5MoeForCausalLM, saved with per-expert keys as save_pretrained
// writes them) and the multimodal checkpoint
// (Qwen3_5MoeForConditionalGeneration, vision tower and mtp.* tensors
// included, its experts saved fused as the published checkpoints hold
// them). Rows of 150 and 67 tokens run the chunked form over three and two
// chunks of 64; a 70-token prefix prefills two. Logits, the training
// forward's logprobs and greedy decoding on the libtorch paths within 1e-4
// of transformers' float64 forward and generate (its recurrent form), in
// f32. Then, on the text model (moeChecks): the packed forward, the aux
// loss, the gradients of -mean logprob + coef * aux against transformers'
// autograd, and the export loaded by transformers.
func TestInteropQwen35MoE(t *testing.T) {
	pyinterop.Python(t)
	root := t.TempDir()
	models := []hfModel{
		{Dir: filepath.Join(root, "qwen3_5_moe-text"), Family: "qwen3_5_moe", Config: qwen35MoESmall(), Style: "5", Seed: 50,
			RefDType: "float64", Full: []int{150, 67, 3}, Explicit: true, Decode: []int{70, 1, 9}, Steps: 6},
		{Dir: filepath.Join(root, "qwen3_5_moe-multimodal-fused"), Family: "qwen3_5_moe_vl", Config: qwen35MoESmall(),
			Vision: qwen35SmallVision, Style: "5", Seed: 51, RefDType: "float64", Full: []int{150, 67, 3}, Explicit: true,
			Decode: []int{70, 1, 9}, Steps: 6, Fused: true},
	}
	interopParity(t, models, []string{"qwen3_5_moe-text", "qwen3_5_moe-multimodal-fused"})
	r, err := safetensors.Open(models[1].Dir)
	if err != nil {
		t.Fatal(err)
	}
	_, fused := r.Info("model.language_model.layers.0.mlp.experts.gate_up_proj")
	r.Close()
	if !fused {
		t.Error("the multimodal checkpoint does not hold its experts fused: the case checks nothing of that form")
	}
	moeChecks(t, models[0].Dir)
}

// Qwen3.5-35B-A3B at its real shape but for depth and expert count: the
// published config's text_config (fixtures.Qwen35MoE35BConfig: vocabulary
// 248,320, untied; width 2048; 16 key and 32 value heads of 128 in the
// DeltaNet layers; 16 heads and 2 key/value heads of 256 in the attention
// layer; experts of width 512, top-8, a shared expert of width 512) with 4
// layers instead of 40 (three DeltaNet layers and the attention layer, the
// pattern's one period) and 16 experts instead of 256, so that
// transformers' float64 reference fits in this machine's memory. Made by
// transformers 5 as the multimodal class saves it, its experts fused, with
// a one-block vision tower instead of the published 27 and mtp.* tensors
// added: logits, logprobs and greedy decoding against transformers'
// float64 forward and generate, in f32 within 1e-4.
func TestInteropQwen35MoERealShape(t *testing.T) {
	pyinterop.Python(t)
	c := qwen35MoE35BText(t)
	c["num_hidden_layers"], c["num_experts"] = 4, 16
	c["layer_types"] = c["layer_types"].([]any)[:4]
	delete(c, "model_type")
	vision := map[string]any{"depth": 1, "hidden_size": 64, "intermediate_size": 128, "num_heads": 2,
		"out_hidden_size": 2048, "patch_size": 16, "num_position_embeddings": 16}
	hm := hfModel{Dir: filepath.Join(t.TempDir(), "Qwen3.5-35B-A3B-4layers-16experts"), Family: "qwen3_5_moe_vl",
		Config: c, Vision: vision, Style: "5", Seed: 52, RefDType: "float64", Full: []int{12, 5}, Decode: []int{7},
		Steps: 3, Fused: true}
	interopParity(t, []hfModel{hm}, []string{"Qwen3.5-35B-A3B (4 layers, 16 experts)"})
}

// qwen35MoE35BText is Qwen3.5-35B-A3B's text_config
// (fixtures.Qwen35MoE35BConfig), a new map on each call.
func qwen35MoE35BText(t *testing.T) map[string]any {
	t.Helper()
	var outer struct {
		TextConfig map[string]any `json:"text_config"`
	}
	if err := json.Unmarshal([]byte(fixtures.Qwen35MoE35BConfig), &outer); err != nil || outer.TextConfig == nil {
		t.Fatalf("Qwen3.5-35B-A3B's config has no text_config: %v", err)
	}
	return outer.TextConfig
}

// qwen35MoETiny is a tiny Qwen3.5 MoE for tests without transformers.
func qwen35MoETiny() Config {
	c := qwen35Config()
	c.ModelType, c.Intermediate = qwen35MoE, 0
	c.MoE = MoE{Experts: 4, ExpertsPerToken: 2, Intermediate: 24, SharedIntermediate: 40, NormTopKProb: true, SparseStep: 1,
		RouterAuxLossCoef: 0.001}
	return c
}

// Qwen3.5-35B-A3B's config (the multimodal form) reads as its text model:
// 40 layers, every one sparse with 256 experts of width 512, top-8
// normalised, and a shared expert of width 512; the hybrid pattern; two
// key/value heads of 256 with RoPE on 64 dimensions at base 1e7. The
// model it describes has 34,660,610,688 parameters, by hand below (the
// published 35B counts the vision tower and the MTP layer too). Written
// back it is the text model's config (qwen3_5_moe_text,
// Qwen3_5MoeForCausalLM) with no intermediate_size, and reads the same.
// Absent keys take Qwen3_5MoeTextConfig's defaults.
func TestConfigQwen35MoE(t *testing.T) {
	c, err := ParseConfig([]byte(fixtures.Qwen35MoE35BConfig), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	want := MoE{Experts: 256, ExpertsPerToken: 8, Intermediate: 512, SharedIntermediate: 512, NormTopKProb: true,
		SparseStep: 1, RouterAuxLossCoef: 0.001}
	if !reflectMoE(c.MoE, want) || c.ModelType != qwen35MoE || !c.Wrapped || !c.IsQwen35() || !c.Hybrid() ||
		c.KVHeads != 2 || c.HeadDim != 256 || c.RotaryDim() != 64 || c.RopeTheta != 1e7 || c.EOS != 248044 ||
		c.TieEmbeddings || c.LinearValueHeads != 32 || c.Vocab != 248320 || !c.QKNorm() {
		t.Fatalf("read as %+v", c)
	}
	for i := range c.Layers {
		if !c.SparseLayer(i) || (c.LayerTypes[i] == FullAttention) != (i%4 == 3) {
			t.Fatalf("layer %d: sparse %v, type %s", i, c.SparseLayer(i), c.LayerTypes[i])
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
	// By hand: embeddings and LM head 2 x 248320 x 2048. A Gated DeltaNet
	// layer: in_proj_qkv (2 x 16 x 128 + 32 x 128) x 2048, in_proj_z 4096 x
	// 2048, in_proj_b and in_proj_a 32 x 2048 each, conv1d 8192 x 4, dt_bias
	// and A_log 32 each, the gated norm 128, out_proj 2048 x 4096. An
	// attention layer: q_proj (16 x 256 x 2, with the gate) x 2048, k_proj
	// and v_proj 512 x 2048 each, o_proj 2048 x 4096, q_norm and k_norm 256
	// each. Every layer: two norms of 2048, the router 256 x 2048, the
	// experts 256 x 3 x 512 x 2048, the shared expert 3 x 512 x 2048 and its
	// gate 2048. The final norm 2048.
	const (
		deltaNet  = 8192*2048 + 4096*2048 + 2*32*2048 + 8192*4 + 2*32 + 128 + 2048*4096
		attention = 8192*2048 + 2*512*2048 + 2048*4096 + 2*256
		sparseMLP = 256*2048 + 256*3*512*2048 + 3*512*2048 + 2048
		params    = 2*248320*2048 + 30*deltaNet + 10*attention + 40*(2*2048+sparseMLP) + 2048
	)
	if n != params {
		t.Errorf("%d parameters, want %d", n, int64(params))
	}
	b, err := c.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var written map[string]any
	if err := json.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	if _, has := written["intermediate_size"]; has || written["model_type"] != qwen35MoE ||
		written["shared_expert_intermediate_size"] != 512.0 || written["num_experts"] != 256.0 {
		t.Errorf("written as %s", b)
	}
	if a, _ := written["architectures"].([]any); len(a) != 1 || a[0] != "Qwen3_5MoeForCausalLM" {
		t.Errorf("architectures %v", written["architectures"])
	}
	back, err := ParseConfig(b, "written")
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if back.Wrapped || !reflectMoE(back.MoE, want) || !slices.Equal(back.LayerTypes, c.LayerTypes) || back.RotaryDim() != 64 {
		t.Fatalf("written and read back as %+v", back)
	}
	// Defaults: Qwen3_5MoeTextConfig's.
	text := qwen35MoE35BText(t)
	for _, k := range []string{"num_experts", "num_experts_per_tok", "moe_intermediate_size", "shared_expert_intermediate_size",
		"num_key_value_heads", "head_dim", "norm_topk_prob", "mlp_only_layers", "router_aux_loss_coef"} {
		delete(text, k)
	}
	db, _ := json.Marshal(text)
	d, err := ParseConfig(db, "config.json")
	if err != nil {
		t.Fatal(err)
	}
	if !reflectMoE(d.MoE, want) || d.KVHeads != 2 || d.HeadDim != 256 {
		t.Errorf("defaults: %+v, kv %d, head_dim %d", d.MoE, d.KVHeads, d.HeadDim)
	}
}

// reflectMoE says whether two MoE settings are the same (no
// mlp_only_layers in either).
func reflectMoE(a, b MoE) bool {
	return len(a.MLPOnlyLayers) == 0 && len(b.MLPOnlyLayers) == 0 && a.Experts == b.Experts &&
		a.ExpertsPerToken == b.ExpertsPerToken && a.Intermediate == b.Intermediate &&
		a.SharedIntermediate == b.SharedIntermediate && a.NormTopKProb == b.NormTopKProb && a.SparseStep == b.SparseStep &&
		a.OutputRouterLogits == b.OutputRouterLogits && a.RouterAuxLossCoef == b.RouterAuxLossCoef
}

// The keys of a Qwen3.5 MoE config that would make another model than
// transformers' Qwen3_5Moe classes compute, or none, are refused by name.
func TestConfigQwen35MoERefusals(t *testing.T) {
	src := fixtures.Qwen35MoE35BConfig
	for _, c := range []struct{ old, new, want string }{
		{`"norm_topk_prob": true`, `"norm_topk_prob": false`, "norm_topk_prob false is not supported for qwen3_5_moe_text"},
		{`"mlp_only_layers": []`, `"mlp_only_layers": [3]`, "mlp_only_layers [3] is not supported"},
		{`"mlp_only_layers": []`, `"decoder_sparse_step": 2`, "decoder_sparse_step 2 is not supported"},
		{`"mlp_only_layers": []`, `"num_local_experts": 256`, "num_local_experts is not supported"},
		{`"shared_expert_intermediate_size": 512`, `"shared_expert_intermediate_size": 0`, "shared_expert_intermediate_size must be positive"},
		{`"num_experts": 256`, `"num_experts": 0`, "num_experts must be positive"},
		{`"num_experts_per_tok": 8`, `"num_experts_per_tok": 300`, "num_experts_per_tok 300 must be in 1..num_experts"},
		{`"model_type": "qwen3_5_moe_text"`, `"model_type": "qwen3_5_text"`, `text_config.model_type "qwen3_5_text" is not supported in a qwen3_5_moe config`},
		{`["Qwen3_5MoeForConditionalGeneration"]`, `["Qwen3_5ForConditionalGeneration"]`, "Qwen3_5ForConditionalGeneration is not supported"},
		{`"dtype": "bfloat16",`, `"dtype": "bfloat16", "quantization_config": {"quant_method": "fp8"},`, "quantization_config"},
		{`"tie_word_embeddings": false, "transformers`, `"tie_word_embeddings": true, "transformers`, "differ: transformers' Qwen3_5MoeForConditionalGeneration"},
		{`"attn_output_gate": true`, `"attn_output_gate": false`, "attn_output_gate false is not supported"},
	} {
		edited := strings.Replace(src, c.old, c.new, 1)
		if edited == src {
			t.Fatalf("%q not in the config", c.old)
		}
		_, err := ParseConfig([]byte(edited), "config.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.new, err, c.want)
		}
	}
	// A shared expert on Qwen3 MoE, which has none.
	q := qwen35MoETiny()
	q.ModelType, q.LayerTypes, q.PartialRotary, q.Intermediate = "qwen3_moe", nil, 0, 48
	if err := q.Validate(); err == nil || !strings.Contains(err.Error(), "Qwen3 MoE has no shared expert") {
		t.Errorf("qwen3_moe with a shared expert: %v", err)
	}
}

// A checkpoint holding each layer's experts fused (mlp.experts.gate_up_proj
// [experts, 2 x width, hidden], each expert's gate rows then its up rows;
// mlp.experts.down_proj [experts, hidden, width]) loads the same weights as
// the per-expert keys agentrl saves; the fused tensors are made here from
// the saved file by those definitions. A checkpoint with both forms is
// refused (the per-expert tensors would be unused), and so is a fused
// tensor of the wrong shape. The model loaded decodes on the libtorch
// paths as its forward computes.
func TestQwen35MoEFusedExperts(t *testing.T) {
	cfg := qwen35MoETiny()
	m, err := NewRandomModel(cfg, Float32, CPU, false, 9)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	r, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	E, I, H := cfg.MoE.Experts, int64(cfg.MoE.Intermediate), int64(cfg.Hidden)
	var tensors, both []safetensors.Tensor
	fusedOf := func(layer int, proj string) []byte {
		var out []byte
		for e := range E {
			for _, p := range strings.Split(proj, "|") {
				b, err := r.Bytes(layerPrefix + strconv.Itoa(layer) + ".mlp.experts." + strconv.Itoa(e) + "." + p + ".weight")
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, b...)
			}
		}
		return out
	}
	for _, name := range r.Names() {
		info, _ := r.Info(name)
		b, _ := r.Bytes(name)
		st := safetensors.Tensor{Name: name, DType: info.DType, Shape: info.Shape, Data: b}
		both = append(both, st)
		if _, rest, ok := layerParam(name); !ok || !isExpertParam(rest) {
			tensors = append(tensors, st)
		}
	}
	for i := range cfg.Layers {
		p := layerPrefix + strconv.Itoa(i) + "."
		f := []safetensors.Tensor{
			{Name: p + fusedGateUp, DType: safetensors.F32, Shape: []int64{int64(E), 2 * I, H}, Data: fusedOf(i, "gate_proj|up_proj")},
			{Name: p + fusedDown, DType: safetensors.F32, Shape: []int64{int64(E), H, I}, Data: fusedOf(i, "down_proj")},
		}
		tensors, both = append(tensors, f...), append(both, f...)
	}
	r.Close()
	write := func(ts []safetensors.Tensor) string {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, "config.json"), mustRead(t, filepath.Join(dir, "config.json")), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := safetensors.Write(filepath.Join(d, "model.safetensors"), ts, nil); err != nil {
			t.Fatal(err)
		}
		return d
	}
	got, err := LoadModel(write(tensors), Float32, CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Free()
	for _, name := range m.Names() {
		a, _ := m.Param(name)
		b, _ := got.Param(name)
		av, _ := a.Float64s()
		bv, _ := b.Float64s()
		a.Free()
		b.Free()
		if !slices.Equal(av, bv) {
			t.Fatalf("%s loaded from the fused tensors differs from the saved one", name)
		}
	}
	if _, err := LoadModel(write(both), Float32, CPU, false); err == nil || !strings.Contains(err.Error(), "not used") ||
		!strings.Contains(err.Error(), "mlp.experts.0.down_proj.weight") {
		t.Errorf("both forms: %v, want the per-expert tensors named as unused", err)
	}
	tensors[len(tensors)-1].Shape = []int64{int64(E), I, H}
	if _, err := LoadModel(write(tensors), Float32, CPU, false); err == nil || !strings.Contains(err.Error(), "mlp.experts.down_proj has shape") {
		t.Errorf("a fused tensor of the wrong shape: %v", err)
	}
	ids := seq(20, 4)
	full := logitsOf(t, got, ids)
	V := cfg.Vocab
	for _, p := range []DecodePath{DecodeFused, DecodeUnfused} {
		e := newEngineOn(t, got, 1, p)
		if err := e.Prefill(0, ids[:12]); err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for n := 12; n < len(ids); n++ {
			l, err := e.PendingLogits(0)
			if err != nil {
				t.Fatal(err)
			}
			worst = math.Max(worst, maxDiff(l, full[(n-1)*V:n*V]))
			if err := e.Prefill(0, ids[n:n+1]); err != nil {
				t.Fatal(err)
			}
		}
		e.Free()
		if worst > 1e-4 {
			t.Errorf("%s decoding differs from the forward by %g", p, worst)
		}
	}
}

// mustRead reads a file or fails the test.
func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// LoRA on a Qwen3.5 MoE: the MLP targets are refused, naming the experts
// and the shared expert.
func TestQwen35MoELoRA(t *testing.T) {
	base, err := NewRandomModel(qwen35MoETiny(), Float32, CPU, false, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Free()
	for _, target := range []string{"gate_proj", "up_proj", "down_proj"} {
		if _, err := NewLoRAModel(base, LoRA{Rank: 4, Alpha: 8, Targets: []string{"q_proj", target}}, false, 1); err == nil ||
			!strings.Contains(err.Error(), "mlp.experts.*, mlp.shared_expert.*") {
			t.Errorf("LoRA on %s of a Qwen3.5 MoE: %v, want a refusal naming the experts and the shared expert", target, err)
		}
	}
}
