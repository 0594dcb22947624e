package torch

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
)

// gemma4Small is a small Gemma 4 text config (Gemma4TextConfig's
// arguments) with every feature of the E2B shape: two periods of a
// sliding, sliding, full pattern; sliding layers of head_dim 16 with a
// window of 8 and their own RoPE base, full layers of head_dim 32 with
// proportional RoPE turning a quarter; the last two layers kv-shared
// (reading layer 3's and layer 2's keys and values) with double-wide MLPs;
// per-layer inputs of 8; logits capped at 2.5 so that the cap bites; weights
// drawn wide.
func gemma4Small() map[string]any {
	return map[string]any{"vocab_size": 384, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 6,
		"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "global_head_dim": 32,
		"layer_types":    []string{SlidingAttention, SlidingAttention, FullAttention, SlidingAttention, SlidingAttention, FullAttention},
		"sliding_window": 8, "num_kv_shared_layers": 2, "use_double_wide_mlp": true,
		"hidden_size_per_layer_input": 8, "vocab_size_per_layer_input": 384, "final_logit_softcapping": 2.5,
		"max_position_embeddings": 512, "rms_norm_eps": 1e-6, "initializer_range": 0.1, "bos_token_id": 1,
		"eos_token_id": 2, "pad_token_id": 0, "tie_word_embeddings": false,
		"rope_parameters": map[string]any{
			SlidingAttention: map[string]any{"rope_type": "default", "rope_theta": 20000.0},
			FullAttention:    map[string]any{"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1e6}}}
}

// gemma4SmallVision is a small vision tower for the multimodal checkpoint.
var gemma4SmallVision = map[string]any{"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
	"num_attention_heads": 2, "num_key_value_heads": 2, "head_dim": 16, "patch_size": 4, "position_embedding_size": 64}

// Gemma 4 models made by transformers 5.25: the text model alone
// (Gemma4ForCausalLM, untied) and the multimodal checkpoint
// (Gemma4ForConditionalGeneration: text_config, the vision tower skipped
// by name, the text under model.language_model.*, tied) with
// attention_k_eq_v (full layers with one key/value head and no v_proj).
// Rows of 40, 35 and 33 tokens cross the sliding window several times (no
// padding query is left without a real key in its window); the explicit
// position ids case jumps, which transformers' sliding mask does not see
// (it counts indices). Logits and the training forward's logprobs (with
// activation checkpointing) against transformers' float64 forward, within
// 1e-4 in f32. The decode engine on its libtorch paths (the kernels say
// they do not run Gemma 4), each row prefilled alone and in batched
// prefills, against transformers' greedy
// generate over prefixes of 20, 1 and 13 tokens and 12 steps (sliding and
// full layers' caches, the kv-shared layers reading them, per-layer
// inputs, the capped logits): the tokens equal, logits within 1e-4.
func TestInteropGemma4(t *testing.T) {
	pyinterop.Python(t)
	root := t.TempDir()
	mm := gemma4Small()
	mm["tie_word_embeddings"] = true
	mm["attention_k_eq_v"] = true
	mm["num_global_key_value_heads"] = 1
	var models []hfModel
	var names []string
	for i, c := range []struct {
		name, family string
		config       map[string]any
		vision       map[string]any
	}{
		{"gemma4-text", "gemma4", gemma4Small(), nil},
		{"gemma4-multimodal-k_eq_v", "gemma4_vl", mm, gemma4SmallVision},
	} {
		models = append(models, hfModel{Dir: filepath.Join(root, c.name), Family: c.family, Config: c.config, Vision: c.vision,
			Style: "5", Seed: 60 + i, RefDType: "float64", Full: []int{40, 35, 33}, Explicit: true,
			Decode: []int{20, 1, 13}, Steps: 12})
		names = append(names, c.name)
	}
	var made hfMade
	pyinterop.Run(t, "testdata/interop/hf_model.py", map[string]any{"models": models}, &made)
	t.Logf("made with transformers %s, torch %s", made.Transformers, made.Torch)
	for i, hm := range models {
		t.Run(names[i], func(t *testing.T) {
			checkStyle(t, hm, made.Models[i].Config, made.Models[i].Files)
			m, err := LoadModel(hm.Dir, Float32, CPU, false)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Free()
			var decode fixtureCase
			for _, c := range loadCases(t, hm.Dir) {
				if c.Kind != "full" {
					decode = c
					continue
				}
				t.Logf("%s: logits max |diff| %.2e, training forward logprobs %.2e", c.Name, fullCaseLogits(t, m, c),
					fullCaseLogprobs(t, m, c))
			}
			e, err := NewEngine(m, 1, 64)
			if err != nil {
				t.Fatal(err)
			}
			d, err := e.Decode()
			e.Free()
			if err != nil || d.Path == DecodeKernels || !strings.Contains(d.Why, "Gemma 4") {
				t.Errorf("a Gemma 4 engine decodes on %v (%q, %v), want the libtorch step, saying the kernels do not run Gemma 4", d.Path, d.Why, err)
			}
			decodePaths(t, m, decode)
		})
		t.Run("training/"+names[i], func(t *testing.T) { gemma4Training(t, hm.Dir) })
	}
}

// gemma4Training checks the training side of the Gemma 4 folder dir
// against transformers in float64 over its right-padded rows: the
// gradient of every parameter (the per-layer inputs' table, projection
// and norms, the sandwich norms, the full and sliding layers'
// projections, the embeddings, tied or not; layer_scalar is a buffer) of
// L = -mean logprob over the real next-token pairs, within 1e-4 in f32,
// unpacked and packed (the rows one after the other, each a tree of its
// own: the window counts positions along it), with activation
// checkpointing off and on, and L within 1e-5; and
// agentrl's export loads in transformers as Gemma4ForCausalLM with every
// parameter and the logits equal.
func gemma4Training(t *testing.T, dir string) {
	full, ref, grads := gradReference(t, dir, "Gemma4ForCausalLM", "eager")
	b := Batch{B: len(full.InputIDs), T: len(full.InputIDs[0]), IDs: flat(full.InputIDs), Attn: flat(full.AttentionMask),
		Positions: flat(full.PositionIDs)}
	for _, k := range []struct{ packed, ckpt bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		packed := k.packed
		name := map[bool]string{false: "unpacked", true: "packed"}[packed] + map[bool]string{false: "", true: "/checkpointing"}[k.ckpt]
		t.Run(name, func(t *testing.T) {
			m, err := LoadModel(dir, Float32, CPU, false)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Free()
			if err := m.SetCheckpointing(k.ckpt); err != nil {
				t.Fatal(err)
			}
			loss := shortLoss(t, m, b, full, packed)
			if math.Abs(loss-ref.Loss) > 1e-5 {
				t.Errorf("loss %v, transformers %v", loss, ref.Loss)
			}
			d := holdGradients(t, m, grads, 1e-4, false)
			t.Logf("loss %.6f (transformers %.6f), gradients max |diff| %.2e", loss, ref.Loss, d)
		})
	}
}

// A Gemma 4 config.json is read with Gemma4TextConfig's defaults (the
// pattern of five sliding layers and a full one, the last forced full;
// proportional RoPE on full layers of head_dim 512, tied embeddings) and
// what is not implemented is refused by name.
func TestGemma4ConfigDefaultsAndRefusals(t *testing.T) {
	base := `"model_type": "gemma4_text", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 48,
		"num_hidden_layers": 8, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
		"hidden_size_per_layer_input": 4, "vocab_size_per_layer_input": 64`
	c, err := ParseConfig([]byte("{"+base+"}"), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	g := c.Gemma
	wantTypes := []string{SlidingAttention, SlidingAttention, SlidingAttention, SlidingAttention, SlidingAttention,
		FullAttention, SlidingAttention, FullAttention}
	if !slices.Equal(c.LayerTypes, wantTypes) || g.SlidingWindow != 512 || g.GlobalHeadDim != 512 || g.GlobalKVHeads != 2 ||
		!c.TieEmbeddings || c.RopeTheta != 10000 || g.GlobalRope != "proportional" || g.GlobalTheta != 1e6 || g.GlobalPartial != 0.25 {
		t.Errorf("defaults: %+v %+v", c, *g)
	}
	// Proportional RoPE over 512 dimensions turns int(0.25*512/2) = 64 pairs.
	inv, err := g.globalRopeFrequencies()
	if err != nil {
		t.Fatal(err)
	}
	if len(inv) != 256 || inv[0] != 1 || !(inv[63] > 0) || inv[64] != 0 {
		t.Errorf("proportional RoPE frequencies: %d entries, [0] %g, [63] %g, [64] %g", len(inv), inv[0], inv[63], inv[64])
	}
	wrapped := `{"model_type": "gemma4", "architectures": ["Gemma4ForConditionalGeneration"], "tie_word_embeddings": false,
		"vision_config": {"hidden_size": 8}, "text_config": {` + base + `}}`
	if c, err := ParseConfig([]byte(wrapped), "config.json"); err != nil || !c.Wrapped || c.TieEmbeddings {
		t.Errorf("multimodal config: wrapped %v, tied %v, %v", c.Wrapped, c.TieEmbeddings, err)
	}
	for extra, want := range map[string]string{
		`"enable_moe_block": true`:             "num_experts must be a positive whole number with enable_moe_block",
		`"use_bidirectional_attention": "all"`: "use_bidirectional_attention",
		`"hidden_activation": "silu"`:          "hidden_activation",
		`"attention_bias": true`:               "attention_bias true",
		`"attn_logit_softcapping": 50.0`:       "attn_logit_softcapping is not supported",
		`"layer_types": ["mamba"]`:             "layer_types must list one type for each",
		`"num_kv_shared_layers": 8`:            "num_kv_shared_layers must be in 0..7",
		`"rope_parameters": {"sliding_attention": {"rope_type": "yarn", "rope_theta": 1.0, "factor": 2.0}}`: "rope_type",
		`"per_layer_config": {"0": {"head_dim": 16}}`:                                                       "a sliding layer's shape is the config's",
	} {
		_, err := ParseConfig([]byte("{"+base+", "+extra+"}"), "config.json")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error naming %q", extra, err, want)
		}
	}
}

// A Gemma 4 config made in code (as model.tiny makes one: no keys read)
// writes a config.json that reads back to the same model: the layer
// types, window, full layers' shape and RoPE, per-layer inputs and cap
// (written 30.0: transformers' Gemma4TextConfig refuses the int 30).
func TestGemma4ConfigJSONFromScratch(t *testing.T) {
	s, f := SlidingAttention, FullAttention
	c := Config{ModelType: "gemma4_text", Vocab: 97, Hidden: 32, Intermediate: 64, Layers: 3, Heads: 2, KVHeads: 1,
		HeadDim: 16, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 1024, BOS: 2, EOS: 2, TieEmbeddings: true,
		LayerTypes: []string{s, s, f},
		Gemma: &Gemma4{SlidingWindow: 128, GlobalHeadDim: 32, GlobalKVHeads: 1, PerLayerDim: 16, PerLayerVocab: 97,
			FinalSoftcap: 30, GlobalRope: "proportional", GlobalTheta: 1e6, GlobalPartial: 0.25}}
	b, err := c.JSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseConfig(b, "config.json")
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !strings.Contains(string(b), `"final_logit_softcapping": 30.0`) {
		t.Errorf("final_logit_softcapping not written as a float:\n%s", b)
	}
	if *back.Gemma != *c.Gemma || !slices.Equal(back.LayerTypes, c.LayerTypes) || back.RopeTheta != c.RopeTheta ||
		back.MaxPositions != c.MaxPositions || back.Hidden != c.Hidden || back.HeadDim != c.HeadDim || !back.TieEmbeddings {
		t.Errorf("read back as %+v %+v from\n%s", back, *back.Gemma, b)
	}
}
