package torch

import (
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
	"github.com/agentrl/agentrl/torch/safetensors"
)

// logitErr is the mean and largest |got - want| over the real (unmasked)
// positions of a full case's logits.
func logitErr(c fixtureCase, got func(b, p, v int) float64, want [][][]float64) (mean, worst float64) {
	n := 0
	for b := range c.InputIDs {
		for p := range c.InputIDs[b] {
			if c.AttentionMask[b][p] == 0 {
				continue
			}
			for v, w := range want[b][p] {
				d := math.Abs(got(b, p, v) - w)
				mean += d
				worst = math.Max(worst, d)
				n++
			}
		}
	}
	return mean / float64(n), worst
}

// realWidthLogits holds agentrl's f32 logits of each full case of the
// folder to transformers' float64 forward: within 1e-4, or, where
// transformers' own float32 forward (logits_f32) misses float64 by more,
// within twice its mean error and three times its largest. It logs both.
// (At Gemma-4-E2B's width agentrl's float32 misses float64 by 1.2 to 2.5
// times what transformers' does; with RoPE tables rounded from float64
// instead of transformers' float32 ones it missed by 30 to 70 times.)
func realWidthLogits(t *testing.T, m *Model, cases []fixtureCase) {
	t.Helper()
	V := m.Config.Vocab
	for _, c := range cases {
		if c.Kind != "full" {
			continue
		}
		T := len(c.InputIDs[0])
		got := caseLogits(t, m, c)
		mean, worst := logitErr(c, func(b, p, v int) float64 { return float64(got[(b*T+p)*V+v]) }, c.Logits)
		tfMean, tfWorst := logitErr(c, func(b, p, v int) float64 { return c.LogitsF32[b][p][v] }, c.Logits)
		t.Logf("%s: logits against float64: agentrl f32 mean %.2e max %.2e; transformers f32 mean %.2e max %.2e",
			c.Name, mean, worst, tfMean, tfWorst)
		if worst > math.Max(1e-4, 3*tfWorst) || mean > math.Max(1e-4, 2*tfMean) {
			t.Errorf("%s: agentrl's f32 logits miss float64 by %.2e mean, %.2e max: beyond 1e-4 and 2 and 3 times transformers' f32 (%.2e, %.2e)",
				c.Name, mean, worst, tfMean, tfWorst)
		}
	}
}

// gemma4E2B is Gemma-4-E2B's published text config (as the multimodal
// checkpoint's text_config holds it) with its 35 layers reduced to two
// periods of its pattern (four sliding layers, then a full one), its 20
// kv-shared layers to the last period's 5, and its vocabulary (both
// tables) from 262,144 to 32,768 so that transformers' float64 reference
// and its float32 one fit beside agentrl's in 24 GiB; width 1536, 8 query
// heads, one key/value head, head_dim 256 and 512, window 512, MLPs of
// 6144 (12,288 in the kv-shared layers), per-layer inputs of 256, logits
// capped at 30.
func gemma4E2B() map[string]any {
	period := []string{SlidingAttention, SlidingAttention, SlidingAttention, SlidingAttention, FullAttention}
	return map[string]any{"vocab_size": 32768, "vocab_size_per_layer_input": 32768, "hidden_size": 1536,
		"intermediate_size": 6144, "num_hidden_layers": 10, "num_attention_heads": 8, "num_key_value_heads": 1,
		"head_dim": 256, "global_head_dim": 512, "attention_k_eq_v": false, "sliding_window": 512,
		"hidden_size_per_layer_input": 256, "num_kv_shared_layers": 5, "use_double_wide_mlp": true,
		"max_position_embeddings": 131072, "rms_norm_eps": 1e-6, "final_logit_softcapping": json.Number("30.0"), // (a float: transformers refuses the int 30)

		"tie_word_embeddings": true, "pad_token_id": 0, "bos_token_id": 2, "eos_token_id": 1,
		"layer_types": append(slices.Clone(period), period...),
		"rope_parameters": map[string]any{
			SlidingAttention: map[string]any{"rope_type": "default", "rope_theta": 10000.0},
			FullAttention:    map[string]any{"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1e6}}}
}

// Gemma-4-E2B at its real width (gemma4E2B: two periods, vocabulary
// reduced), as the multimodal checkpoint (a small vision tower beside it)
// made by transformers 5.25 with random weights, against transformers'
// float64 forward and generate, where float32 cannot keep 1e-4 (scores
// of q_norm'd queries and keys, unscaled, of std about 16; tied logits
// over 1536 wide rows): rows of 32 and 23 tokens, right-padded and with
// positions from 3000 (RoPE's angles far out); the logits
// (realWidthLogits), the training forward's logprobs
// (realWidthLogprobs), the decode engine fused and unfused from prefixes
// of 20 and 1 token over 3 greedy steps (realWidthDecode), and the
// gradient of every parameter (realWidthGradients), each against
// transformers' own float32 error measured here.
func TestInteropGemma4E2BRealShape(t *testing.T) {
	realWidthCheck(t, hfModel{Dir: filepath.Join(t.TempDir(), "gemma-4-E2B-2periods"), Family: "gemma4_vl",
		Config: gemma4E2B(), Vision: gemma4SmallVision, Style: "5", Seed: 80, RefDType: "float64", Full: []int{32, 23},
		Explicit: true, ExplicitStart: 3000, Ref32: true, Decode: []int{20, 1}, Steps: 3})
}

// gemma4A4B is Gemma-4-26B-A4B's published text config (the multimodal
// checkpoint's text_config, as google/gemma-4-26B-A4B's config.json is
// quoted in public config-parsing tests of other projects: hidden 2816,
// 30 layers of five sliding then one full, 16 query heads, 8 key/value
// heads of 256 in sliding layers and 2 of 512 in full ones with
// attention_k_eq_v, window 1024, a dense MLP of 2112 beside 128 experts
// of 704 with 8 a token, no per-layer inputs, no kv-shared layers,
// vocabulary 262,144 tied, logits capped at 30) with what float64 on a
// 24 GiB machine cannot hold reduced: one period of its pattern, not
// two (a period is 329M parameters before any expert, and transformers'
// float64 autograd holds 16 bytes a parameter), 9 experts, not 128 (each
// is 5.95M parameters a layer; 8 a token as published, so the router
// still leaves one out), and a vocabulary of 8,192: 673M parameters,
// about 10.8 GB in transformers' float64 gradient check.
func gemma4A4B() map[string]any {
	s, f := SlidingAttention, FullAttention
	return map[string]any{"vocab_size": 8192, "hidden_size": 2816, "intermediate_size": 2112, "num_hidden_layers": 6,
		"num_attention_heads": 16, "num_key_value_heads": 8, "num_global_key_value_heads": 2, "head_dim": 256,
		"global_head_dim": 512, "attention_k_eq_v": true, "sliding_window": 1024, "hidden_size_per_layer_input": 0,
		"num_kv_shared_layers": 0, "use_double_wide_mlp": false, "enable_moe_block": true, "num_experts": 9,
		"top_k_experts": 8, "moe_intermediate_size": 704, "max_position_embeddings": 262144, "rms_norm_eps": 1e-6,
		"final_logit_softcapping": json.Number("30.0"), "tie_word_embeddings": true, "pad_token_id": 0,
		"bos_token_id": 2, "eos_token_id": 1, "layer_types": []string{s, s, s, s, s, f},
		"rope_parameters": map[string]any{
			SlidingAttention: map[string]any{"rope_type": "default", "rope_theta": 10000.0},
			FullAttention:    map[string]any{"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1e6}}}
}

// Gemma-4-26B-A4B at its real width (gemma4A4B: one period, 9 experts,
// vocabulary reduced), as the multimodal checkpoint made by transformers
// 5.25 with random weights, checked as TestInteropGemma4E2BRealShape
// checks E2B (realWidthCheck): rows of 32 and 23 tokens, right-padded and
// with positions from 3000, decoding from prefixes of 20 and 1 token.
func TestInteropGemma4A4BRealShape(t *testing.T) {
	realWidthCheck(t, hfModel{Dir: filepath.Join(t.TempDir(), "gemma-4-26B-A4B-1period"), Family: "gemma4_vl",
		Config: gemma4A4B(), Vision: gemma4SmallVision, Style: "5", Seed: 81, RefDType: "float64", Full: []int{32, 23},
		Explicit: true, ExplicitStart: 3000, Ref32: true, Decode: []int{20, 1}, Steps: 3})
}

// nemotron3Nano is NVIDIA-Nemotron-3-Nano-30B-A3B's config.json (as
// quoted in public config-parsing tests of other projects, and as
// Megatron-Bridge's Nemotron3NanoProvider sets it: hidden 2688, 32 query
// heads and 2 key/value heads of 128, Mamba-2 64 heads of 64 in 8 groups,
// state 128, conv kernel 4, chunks of 128, experts of 1856 (relu2) with 6
// a token from one group, weights normalised and times 2.5, a shared
// expert of 3712, norms' epsilon 1e-5, untied embeddings) with its 52
// layers reduced to the opening period of its pattern, MEMEM*E; its 128
// experts to 12 (each is 10M parameters a layer; float64 autograd holds
// 16 bytes a parameter) and its vocabulary from 131,072 to 8,192 (two
// 2688-wide tables): 603M parameters, about 9.7 GB in transformers'
// float64 gradient check.
func nemotron3Nano() map[string]any {
	return map[string]any{"vocab_size": 8192, "hidden_size": 2688, "intermediate_size": 1856,
		"layers_block_type":   []string{MambaBlock, MoEBlock, MambaBlock, MoEBlock, MambaBlock, AttentionBlock, MoEBlock},
		"num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128, "mamba_num_heads": 64,
		"mamba_head_dim": 64, "n_groups": 8, "ssm_state_size": 128, "conv_kernel": 4, "chunk_size": 128,
		"layer_norm_epsilon": 1e-5, "n_routed_experts": 12, "num_experts_per_tok": 6, "moe_intermediate_size": 1856,
		"moe_shared_expert_intermediate_size": 3712, "n_group": 1, "topk_group": 1, "routed_scaling_factor": 2.5,
		"norm_topk_prob": true, "max_position_embeddings": 262144, "tie_word_embeddings": false,
		"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}
}

// Nemotron-3-Nano-30B-A3B at its real width (nemotron3Nano: one period,
// 12 experts, vocabulary reduced), made by transformers 5.25 with random
// weights, checked as TestInteropGemma4E2BRealShape checks E2B
// (realWidthCheck): rows of 150 and 37 tokens (the scan over two chunks
// of 128), right-padded and with positions from 3000 (Nemotron-H has no
// RoPE: the positions only move the packed-sequence case), decoding from
// prefixes of 20 and 1 token.
func TestInteropNemotron3NanoRealShape(t *testing.T) {
	realWidthCheck(t, hfModel{Dir: filepath.Join(t.TempDir(), "nemotron-3-nano-1period"), Family: "nemotron_h",
		Config: nemotron3Nano(), Style: "5", Seed: 82, RefDType: "float64", Full: []int{150, 37}, Explicit: true,
		ExplicitStart: 3000, Ref32: true, Decode: []int{20, 1}, Steps: 3})
}

// realWidthCheck makes hm with transformers and holds agentrl to it in
// f32: the logits (realWidthLogits), the training forward's logprobs
// (realWidthLogprobs), the decode engine fused and unfused
// (realWidthDecode), and the gradient of every parameter
// (realWidthGradients), each against transformers' own float32 error
// measured here.
func realWidthCheck(t *testing.T, hm hfModel) {
	t.Helper()
	pyinterop.Python(t)
	var made hfMade
	pyinterop.Run(t, "testdata/interop/hf_model.py", map[string]any{"models": []hfModel{hm}}, &made)
	if hm.Family != "nemotron_h" { // (Nemotron-H has no RoPE keys to check)
		checkStyle(t, hm, made.Models[0].Config, made.Models[0].Files)
	}
	m, err := LoadModel(hm.Dir, Float32, CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	cases := loadCases(t, hm.Dir)
	realWidthLogits(t, m, cases)
	realWidthLogprobs(t, m, cases)
	realWidthDecode(t, m, cases)
	m.Free()
	realWidthGradients(t, hm.Dir, cases)
}

// realWidthLogprobs holds the training forward's logprob of each real
// next token (with the autograd graph and activation checkpointing, as in
// training) to log softmax of transformers' float64 logits: within 1e-4,
// or within three times the largest miss of transformers' float32 logits'
// log softmax.
func realWidthLogprobs(t *testing.T, m *Model, cases []fixtureCase) {
	t.Helper()
	if err := m.SetCheckpointing(true); err != nil {
		t.Fatal(err)
	}
	defer m.SetCheckpointing(false)
	for _, c := range cases {
		if c.Kind != "full" {
			continue
		}
		B, T := len(c.InputIDs), len(c.InputIDs[0])
		got := caseLogprobs(t, m, c)
		worst, tf, bias, tfBias, n := 0.0, 0.0, 0.0, 0.0, 0
		for b := range B {
			for p := 0; p+1 < T; p++ {
				if c.AttentionMask[b][p] == 0 || c.AttentionMask[b][p+1] == 0 {
					continue
				}
				want := logSoftmax64At(c.Logits[b][p], c.InputIDs[b][p+1])
				d, dt := float64(got[b*(T-1)+p])-want, logSoftmax64At(c.LogitsF32[b][p], c.InputIDs[b][p+1])-want
				worst, tf = math.Max(worst, math.Abs(d)), math.Max(tf, math.Abs(dt))
				bias, tfBias, n = bias+d, tfBias+dt, n+1
			}
		}
		t.Logf("%s: training forward logprobs against float64: agentrl f32 max %.2e (mean signed %.2e), transformers f32 %.2e (%.2e)",
			c.Name, worst, bias/float64(n), tf, tfBias/float64(n))
		if worst > math.Max(1e-4, 3*tf) {
			t.Errorf("%s: the training forward's logprobs miss float64 by %.2e: beyond 1e-4 and 3 times transformers' f32 (%.2e)",
				c.Name, worst, tf)
		}
	}
}

// decodeErr is the largest difference of the decode case c's logits
// (prefill, then each step) from transformers' float64 ones.
func decodeErr(c fixtureCase, got func(i, b int) []float64) float64 {
	worst := 0.0
	for b := range c.PrefixIDs {
		for i := 0; i <= len(c.Steps); i++ {
			want := c.PrefillLast[b]
			if i > 0 {
				want = c.Steps[i-1].Logits[b]
			}
			g := got(i, b)
			for v := range want {
				worst = math.Max(worst, math.Abs(g[v]-want[v]))
			}
		}
	}
	return worst
}

// realWidthDecode holds the decode engine, fused and unfused, each row
// prefilled alone and batched, to transformers' greedy generate in
// float64: the tokens equal, the logits within 1e-4 or, where
// transformers' own float32 decoding (along the same tokens) misses
// float64 by more, within 3 times its error, the bound realWidthLogits
// puts on the same logits' largest miss. (1.5 times held E2B, 2.4e-4
// against 2.6e-4, but not 26B-A4B: 3.8e-4 against 2.2e-4 on one batched
// prefill, whose unbatched twin missed by 3.2e-4: agentrl's own f32
// moves 6e-5 between the two layouts of the same row.)
func realWidthDecode(t *testing.T, m *Model, cases []fixtureCase) {
	t.Helper()
	for _, c := range cases {
		if c.Kind != "decode" {
			continue
		}
		tf := decodeErr(c, func(i, b int) []float64 {
			if i == 0 {
				return c.PrefillLast32[b]
			}
			return c.Steps[i-1].LogitsF32[b]
		})
		tol := math.Max(1e-4, 3*tf)
		for _, p := range []DecodePath{DecodeFused, DecodeUnfused} {
			for _, batched := range []bool{false, true} {
				d := decodeCaseWithin(t, m, c, p, batched, tol)
				t.Logf("decode %s (batched prefill %v): logits max |diff| %.2e against float64 (transformers f32 %.2e; bound %.2e)",
					p, batched, d, tf, tol)
			}
		}
	}
}

// realWidthGradients holds the gradient of every parameter of the short
// loss over the folder's right-padded rows, by agentrl's training forward
// in f32, to transformers' autograd in float64 (grad_check.py without its
// export check), holdGradientsBeside; and the short loss (the training
// logprobs' mean) within 1e-5 or, past that, within 3 times transformers'
// float32 short loss's miss or twice the mean miss of its float32
// logprobs, of which the loss is the mean. (At 26B-A4B's width agentrl's
// loss misses by 2.4e-5, transformers' f32 by 2.6e-6: its logprobs'
// misses cancel in the mean more than agentrl's do.)
func realWidthGradients(t *testing.T, dir string, cases []fixtureCase) {
	t.Helper()
	var full fixtureCase
	for _, c := range cases {
		if c.Name == "right_padded" {
			full = c
		}
	}
	grads, grads32 := filepath.Join(t.TempDir(), "grads.safetensors"), filepath.Join(t.TempDir(), "grads32.safetensors")
	var ref gradChecked
	pyinterop.Run(t, "testdata/interop/grad_check.py", map[string]any{"dir": dir, "ids": full.InputIDs,
		"mask": full.AttentionMask, "grads": grads, "grads32": grads32, "no_export": true}, &ref)
	m, err := LoadModel(dir, Float32, CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	b := Batch{B: len(full.InputIDs), T: len(full.InputIDs[0]), IDs: flat(full.InputIDs), Attn: flat(full.AttentionMask),
		Positions: flat(full.PositionIDs)}
	loss := shortLoss(t, m, b, full, false)
	tf, tfMean := math.Abs(ref.Loss32-ref.Loss), 0.0 // transformers' f32 loss's miss, and its logprobs' mean miss
	n := 0
	for b := range full.InputIDs {
		for p := 0; p+1 < len(full.InputIDs[b]); p++ {
			if full.AttentionMask[b][p] == 1 && full.AttentionMask[b][p+1] == 1 {
				id := full.InputIDs[b][p+1]
				tfMean += math.Abs(logSoftmax64At(full.LogitsF32[b][p], id) - logSoftmax64At(full.Logits[b][p], id))
				n++
			}
		}
	}
	tfMean /= float64(n)
	if bound := math.Max(1e-5, math.Max(3*tf, 2*tfMean)); math.Abs(loss-ref.Loss) > bound {
		t.Errorf("loss %v, transformers %v: beyond %.2e (1e-5; 3 times transformers' float32 loss's miss, %.2e; twice its logprobs' mean miss, %.2e)",
			loss, ref.Loss, bound, tf, tfMean)
	}
	holdGradientsBeside(t, m, grads, grads32)
	t.Logf("loss %.8f (transformers float64 %.8f, float32 %.8f)", loss, ref.Loss, ref.Loss32)
}

// holdGradientsBeside holds the gradient of every parameter of m to
// transformers' float64 one in the safetensors file grads: within 1e-4,
// or, where transformers' own float32 gradient (grads32) misses float64
// by more, within 10 times its error, and the largest difference over
// all parameters within 3 times transformers' float32 largest. It logs
// the largest differences and the largest ratio of agentrl's error to
// transformers' float32 one. (At Gemma-4-E2B's width: 4.8e-2 against
// 2.4e-2, a parameter's up to 6.6 times; float32's error in a gradient
// of a 1536-wide model over 32,768 logits is far above 1e-4 either way.)
func holdGradientsBeside(t *testing.T, m *Model, grads, grads32 string) {
	t.Helper()
	r64, err := safetensors.Open(grads)
	if err != nil {
		t.Fatal(err)
	}
	defer r64.Close()
	r32, err := safetensors.Open(grads32)
	if err != nil {
		t.Fatal(err)
	}
	defer r32.Close()
	worst, worstTF, ratio := 0.0, 0.0, 0.0
	for _, name := range m.Names() {
		if strings.HasSuffix(name, ".layer_scalar") || strings.HasSuffix(name, ".e_score_correction_bias") {
			continue // buffers in transformers (holdGradients)
		}
		want, err := float64sOf(r64, name)
		if err != nil {
			t.Fatalf("transformers has no gradient for %s: %v", name, err)
		}
		tf, err := float64sOf(r32, name)
		if err != nil || len(tf) != len(want) {
			t.Fatalf("transformers' float32 gradient of %s: %d values (%v), float64 %d", name, len(tf), err, len(want))
		}
		got := paramGrad(t, m, name, len(want))
		d, dt := 0.0, 0.0
		for i := range want {
			d = math.Max(d, math.Abs(got[i]-want[i]))
			dt = math.Max(dt, math.Abs(tf[i]-want[i]))
		}
		worst, worstTF = math.Max(worst, d), math.Max(worstTF, dt)
		if dt > 0 {
			ratio = math.Max(ratio, d/dt)
		}
		if d > math.Max(1e-4, 10*dt) {
			t.Errorf("gradient of %s misses float64 by %.2e: beyond 1e-4 and 10 times transformers' float32 (%.2e)", name, d, dt)
		}
	}
	if worst > math.Max(1e-4, 3*worstTF) {
		t.Errorf("the gradients miss float64 by up to %.2e: beyond 3 times transformers' float32 (%.2e)", worst, worstTF)
	}
	t.Logf("gradients against float64: agentrl f32 max %.2e, transformers f32 max %.2e; per parameter, agentrl's error at most %.2f times transformers'",
		worst, worstTF, ratio)
}

// paramGrad is the gradient of m's parameter name as n float64 values
// (zeros where it has none).
func paramGrad(t *testing.T, m *Model, name string, n int) []float64 {
	t.Helper()
	p, err := m.Param(name)
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.Grad()
	p.Free()
	if err != nil {
		t.Fatal(err)
	}
	got := make([]float64, n)
	if g != nil {
		got, _ = g.Float64s()
		g.Free()
	}
	if len(got) != n {
		t.Fatalf("gradient of %s: %d values, transformers' %d", name, len(got), n)
	}
	return got
}
