package torch

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
)

// gemma4MoESmall is a small Gemma 4 MoE config with the features of the
// 26B-A4B shape: the MoE block in every layer beside its dense MLP (16
// experts of width 16, 4 a token), full layers with attention_k_eq_v (one
// key/value head, no v_proj) and their own head size, no per-layer
// inputs and no kv-shared layers; two periods of a sliding, full pattern
// with a window of 8; logits capped at 2.5; weights drawn wide.
func gemma4MoESmall() map[string]any {
	return map[string]any{"vocab_size": 384, "hidden_size": 64, "intermediate_size": 48, "num_hidden_layers": 4,
		"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "global_head_dim": 32,
		"attention_k_eq_v": true, "num_global_key_value_heads": 1,
		"layer_types":    []string{SlidingAttention, FullAttention, SlidingAttention, FullAttention},
		"sliding_window": 8, "hidden_size_per_layer_input": 0, "final_logit_softcapping": 2.5,
		"enable_moe_block": true, "num_experts": 16, "top_k_experts": 4, "moe_intermediate_size": 16,
		"max_position_embeddings": 512, "rms_norm_eps": 1e-6, "initializer_range": 0.1, "bos_token_id": 1,
		"eos_token_id": 2, "pad_token_id": 0, "tie_word_embeddings": true,
		"rope_parameters": map[string]any{
			SlidingAttention: map[string]any{"rope_type": "default", "rope_theta": 10000.0},
			FullAttention:    map[string]any{"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1e6}}}
}

// A Gemma 4 MoE model made by transformers 5.25 as the 26B-A4B is
// published (Gemma4ForConditionalGeneration: enable_moe_block in
// text_config, a vision tower skipped by name, the text under
// model.language_model.*; the router's scale and per_expert_scale and the
// MoE block's norms drawn around 1): logits and the training forward's
// logprobs against transformers' float64 forward within 1e-4 in f32; the
// decode engine on its libtorch paths against transformers' greedy
// generate (tokens equal, logits within 1e-4); the gradient of every
// parameter (router.proj, scale, per_expert_scale, the fused experts, the
// dense MLP and every norm) against transformers' autograd within 1e-4,
// unpacked and packed; agentrl's export loads back in transformers with
// every parameter and the logits equal. The routing of the training
// forward replays to the same logprobs, and the engine records the
// experts the forward takes.
func TestInteropGemma4MoE(t *testing.T) {
	pyinterop.Python(t)
	hm := hfModel{Dir: filepath.Join(t.TempDir(), "gemma4-moe"), Family: "gemma4_vl", Config: gemma4MoESmall(),
		Vision: gemma4SmallVision, Style: "5", Seed: 70, RefDType: "float64", Full: []int{40, 35, 33}, Explicit: true, Decode: []int{20, 1, 13}, Steps: 12}
	var made hfMade
	pyinterop.Run(t, "testdata/interop/hf_model.py", map[string]any{"models": []hfModel{hm}}, &made)
	t.Logf("made with transformers %s, torch %s", made.Transformers, made.Torch)
	checkStyle(t, hm, made.Models[0].Config, made.Models[0].Files)
	m, err := LoadModel(hm.Dir, Float32, CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if got := m.Config.SparseLayers(); got != 4 {
		t.Fatalf("%d sparse layers, want 4", got)
	}
	var decode fixtureCase
	for _, c := range loadCases(t, hm.Dir) {
		if c.Kind != "full" {
			decode = c
			continue
		}
		t.Logf("%s: logits max |diff| %.2e, training forward logprobs %.2e", c.Name, fullCaseLogits(t, m, c),
			fullCaseLogprobs(t, m, c))
	}
	decodePaths(t, m, decode)
	t.Run("routing", func(t *testing.T) { gemma4MoERouting(t, m, decode.PrefixIDs[0]) })
	t.Run("training", func(t *testing.T) { gemma4Training(t, hm.Dir) })
}

// gemma4MoERouting checks routing record and replay on Gemma 4's router:
// replaying a forward's own choices gives its logprobs exactly, and the
// engine, prefilling ids and decoding 4 steps, records the experts a
// training forward over the same tokens takes.
func gemma4MoERouting(t *testing.T, m *Model, ids []int64) {
	b := rowBatch(ids)
	lp, r := routedForward(t, m, b, ForwardOptions{})
	if r == nil || r.Layers != 4 || r.K != 4 || len(r.Experts) != len(ids)*4*4 {
		t.Fatalf("recorded routing %+v", r)
	}
	replayLP, _ := routedForward(t, m, b, ForwardOptions{ReplayRouting: r})
	if !slices.Equal(lp, replayLP) {
		t.Errorf("replaying the forward's own routing changes its logprobs by %g", realDiff(b, lp, replayLP))
	}
	e, err := NewEngine(m, 1, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Free()
	if err := e.SetRecordRouting(true); err != nil {
		t.Fatal(err)
	}
	hist := slices.Clone(ids)
	if err := e.PrefillBatch([]int{0}, [][]int64{hist}); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		toks, lps := make([]int64, 1), make([]float32, 1)
		if err := e.Step([]int{0}, Sampling{Temperature: 1}, toks, lps); err != nil {
			t.Fatal(err)
		}
		hist = append(hist, toks[0])
	}
	got, err := e.Routing(0)
	if err != nil {
		t.Fatal(err)
	}
	_, want := routedForward(t, m, rowBatch(hist), ForwardOptions{})
	if !slices.Equal(sortedChoices(got), sortedChoices(want)) {
		t.Errorf("the engine recorded %v, the forward routes %v", got.Experts, want.Experts)
	}
}

// A Gemma 4 MoE config reads enable_moe_block's keys, which have no
// defaults (null in Gemma4TextConfig), refuses them out of range by name,
// and ignores them without enable_moe_block, as transformers does; the
// router load-balancing loss, which Gemma4ForCausalLM does not have, is
// refused.
func TestGemma4MoEConfig(t *testing.T) {
	base := `"model_type": "gemma4_text", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48,
		"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
		"global_head_dim": 16, "hidden_size_per_layer_input": null`
	moe := `"enable_moe_block": true, "num_experts": 8, "moe_intermediate_size": 16`
	c, err := ParseConfig([]byte("{"+base+", "+moe+`, "top_k_experts": 2}`), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	if m := c.MoE; m.Experts != 8 || m.ExpertsPerToken != 2 || m.Intermediate != 16 || !m.NormTopKProb || c.SparseLayers() != 2 ||
		c.Gemma.PerLayerDim != 0 {
		t.Errorf("MoE %+v, %d sparse layers, per-layer inputs %d (null: none)", m, c.SparseLayers(), c.Gemma.PerLayerDim)
	}
	b, err := c.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := ParseConfig(b, "config.json"); err != nil || !slices.Equal([]int{back.MoE.Experts, back.MoE.ExpertsPerToken,
		back.MoE.Intermediate}, []int{8, 2, 16}) {
		t.Errorf("read back: %+v, %v\n%s", back.MoE, err, b)
	}
	if c, err := ParseConfig([]byte("{"+base+`, "num_experts": 8, "top_k_experts": 2}`), "config.json"); err != nil || c.Sparse() {
		t.Errorf("without enable_moe_block: sparse %v, %v", c.Sparse(), err)
	}
	for extra, want := range map[string]string{
		moe:                          "top_k_experts must be a positive whole number with enable_moe_block, got null",
		moe + `, "top_k_experts": 9`: "top_k_experts 9 must be in 1..num_experts (8)",
		`"enable_moe_block": true, "num_experts": 8, "top_k_experts": 2`: "moe_intermediate_size must be a positive whole number",
		`"enable_moe_block": "yes"`:                                      "enable_moe_block",
	} {
		_, err := ParseConfig([]byte("{"+base+", "+extra+"}"), "config.json")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error naming %q", extra, err, want)
		}
	}
	m, err := NewRandomModel(c, Float32, CPU, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	_, err = m.Forward(Batch{B: 1, T: 3, IDs: []int64{5, 6, 7}, Attn: []int64{1, 1, 1}, Positions: []int64{0, 1, 2}},
		ForwardOptions{RouterAuxLoss: true})
	if err == nil || !strings.Contains(err.Error(), "Gemma 4's routers have none") {
		t.Errorf("the load-balancing loss on Gemma 4: got %v, want it refused by name", err)
	}
}
