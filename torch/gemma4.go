package torch

// #include "agentrl.h"
import "C"

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Gemma 4 (transformers' gemma4): a decoder of sliding-window and full
// attention layers in a pattern, each type with its own RoPE, full layers
// with their own head size (and, with attention_k_eq_v, their own
// key/value heads and no v_proj), the last num_kv_shared_layers layers
// reading an earlier layer's keys and values, per-layer input embeddings,
// sandwich norms, GELU-tanh MLPs and capped logits (cgo/gemma4.h); with
// enable_moe_block (26B-A4B) each layer adds a router and GELU-tanh experts
// beside its MLP (cgo/moe.h). Its
// config comes as the text model's alone (model_type gemma4_text,
// Gemma4ForCausalLM, weights under model.*) or the multimodal checkpoint's
// (model_type gemma4, Gemma4ForConditionalGeneration: text settings in
// text_config, text weights under model.language_model., the vision and
// audio towers skipped by name).

// gemma4Type is the text model's model_type, the family's name here.
const gemma4Type = "gemma4_text"

// SlidingAttention is the layer type of a sliding-window attention layer.
const SlidingAttention = "sliding_attention"

// Gemma4 is what a Gemma 4 config adds to Config (whose LayerTypes are
// its layer types, HeadDim, KVHeads and RopeTheta its sliding layers').
type Gemma4 struct {
	SlidingWindow  int     // sliding_window
	GlobalHeadDim  int     // a full layer's head_dim
	GlobalKVHeads  int     // a full layer's num_key_value_heads
	KEqV           bool    // attention_k_eq_v: full layers' values are their keys' projection
	KVSharedLayers int     // num_kv_shared_layers
	DoubleWideMLP  bool    // use_double_wide_mlp: the kv-shared layers' MLPs twice as wide
	PerLayerDim    int     // hidden_size_per_layer_input (0: no per-layer inputs)
	PerLayerVocab  int     // vocab_size_per_layer_input
	FinalSoftcap   float64 // final_logit_softcapping (0: none)
	GlobalRope     string  // the full layers' rope_type: proportional or default
	GlobalTheta    float64 // their rope_theta
	GlobalPartial  float64 // their partial_rotary_factor (proportional)
}

// IsGemma4 reports whether the model is a Gemma 4 text model.
func (c Config) IsGemma4() bool { return c.Gemma != nil }

// gemma4Skipped are the multimodal checkpoint's tensors the text model
// does not load: the vision and audio towers and their embedders.
var gemma4Skipped = []string{"model.vision_tower.", "model.audio_tower.", "model.embed_vision.", "model.embed_audio."}

// gemma4Known are the keys of transformers 5.25's Gemma4TextConfig (and
// PreTrainedConfig's common ones) that parseGemma4 reads or that do not
// change the math; any other key is refused by name.
var gemma4Known = []string{"model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
	"num_attention_heads", "num_key_value_heads", "head_dim", "hidden_activation", "max_position_embeddings",
	"initializer_range", "rms_norm_eps", "use_cache", "pad_token_id", "eos_token_id", "bos_token_id",
	"tie_word_embeddings", "rope_parameters", "attention_bias", "attention_dropout", "sliding_window", "layer_types",
	"final_logit_softcapping", "use_bidirectional_attention", "vocab_size_per_layer_input",
	"hidden_size_per_layer_input", "attention_k_eq_v", "num_kv_shared_layers", "enable_moe_block",
	"use_double_wide_mlp", "num_experts", "top_k_experts", "moe_intermediate_size", "per_layer_config",
	"global_head_dim", "num_global_key_value_heads", "architectures", "dtype", "torch_dtype", "transformers_version",
	"quantization_config", "output_attentions", "output_hidden_states", "return_dict", "chunk_size_feed_forward",
	"is_encoder_decoder", "id2label", "label2id", "problem_type", "tokenizer_class", "_name_or_path"}

// isGemma4 says whether a raw config.json is Gemma 4's, text or multimodal.
func isGemma4(raw map[string]any) bool {
	return raw["model_type"] == gemma4Type || raw["model_type"] == "gemma4"
}

// parseGemma4 reads a Gemma 4 config.json (raw, parsed; name for messages)
// with Gemma4TextConfig's defaults, refusing by name what is not
// implemented: bidirectional attention, attention biases
// or dropout, an activation other than GELU-tanh, RoPE types other than
// default (sliding layers) and proportional or default (full layers).
func parseGemma4(raw map[string]any, name string) (Config, error) {
	c, err := parseGemma4Raw(raw)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

func parseGemma4Raw(raw map[string]any) (Config, error) {
	c := Config{ModelType: gemma4Type, Gemma: &Gemma4{}}
	if raw["model_type"] == "gemma4" {
		if err := gemma4Architectures(raw, "Gemma4ForConditionalGeneration", "Gemma4ForCausalLM"); err != nil {
			return Config{}, err
		}
		text, ok := raw["text_config"].(map[string]any)
		if !ok {
			return Config{}, fmt.Errorf("model_type gemma4: text_config must be an object, got %s", jsonText(raw["text_config"]))
		}
		if mt, ok := text["model_type"]; ok && mt != gemma4Type {
			return Config{}, fmt.Errorf("text_config.model_type %v is not supported (gemma4_text)", mt)
		}
		outer, err := rawBool2(raw, "tie_word_embeddings", true)
		if err != nil {
			return Config{}, err
		}
		if q, ok := raw["quantization_config"]; ok && q != nil {
			return Config{}, fmt.Errorf("quantization_config is not supported (a quantized checkpoint; load its unquantized weights)")
		}
		inner := map[string]any{}
		for k, v := range text {
			inner[k] = v
		}
		inner["model_type"] = gemma4Type
		inner["tie_word_embeddings"] = outer // Gemma4ForConditionalGeneration ties by the outer config's
		for _, k := range []string{"dtype", "torch_dtype"} {
			if v, ok := raw[k]; ok {
				inner[k] = v
			}
		}
		delete(inner, "architectures")
		raw = inner
		c.Wrapped = true
	} else if err := gemma4Architectures(raw, "Gemma4ForCausalLM"); err != nil {
		return Config{}, err
	}
	c.Raw = raw
	for k := range raw {
		if !slices.Contains(gemma4Known, k) {
			return Config{}, fmt.Errorf("%s is not supported for gemma4 (a key Gemma4TextConfig does not have)", k)
		}
	}
	g := c.Gemma
	ints := []struct {
		key  string
		dst  *int
		def  float64
		null bool
	}{{"vocab_size", &c.Vocab, 262144, false}, {"hidden_size", &c.Hidden, 2304, false},
		{"intermediate_size", &c.Intermediate, 9216, false}, {"num_hidden_layers", &c.Layers, 30, false},
		{"num_attention_heads", &c.Heads, 8, false}, {"num_key_value_heads", &c.KVHeads, 4, false},
		{"head_dim", &c.HeadDim, 256, false}, {"max_position_embeddings", &c.MaxPositions, 131072, false},
		{"bos_token_id", &c.BOS, 2, true}, {"sliding_window", &g.SlidingWindow, 512, false},
		{"vocab_size_per_layer_input", &g.PerLayerVocab, 262144, false},
		{"hidden_size_per_layer_input", &g.PerLayerDim, 256, true},
		{"num_kv_shared_layers", &g.KVSharedLayers, 0, false}}
	for _, f := range ints {
		v, err := rawNumber(raw, f.key, f.def, f.null)
		if err != nil {
			return Config{}, err
		}
		if v != math.Trunc(v) || math.Abs(v) > 1<<40 {
			return Config{}, fmt.Errorf("%s must be a whole number, got %v", f.key, v)
		}
		*f.dst = int(v)
	}
	if v, ok := raw["hidden_size_per_layer_input"]; ok && v == nil {
		g.PerLayerDim = 0 // null: no per-layer inputs (transformers tests it for truth)
	}
	c.EOS = 1
	switch e := raw["eos_token_id"].(type) {
	case float64:
		c.EOS = int(e)
	case []any:
		if len(e) > 0 {
			if f, ok := e[0].(float64); ok {
				c.EOS = int(f)
			}
		}
	}
	var err error
	if c.RMSEps, err = rawNumber(raw, "rms_norm_eps", 1e-6, false); err != nil {
		return Config{}, err
	}
	if g.FinalSoftcap, err = rawNumber(raw, "final_logit_softcapping", 0, true); err != nil {
		return Config{}, err
	}
	if c.TieEmbeddings, err = rawBool2(raw, "tie_word_embeddings", true); err != nil {
		return Config{}, err
	}
	if g.KEqV, err = rawBool(raw, "attention_k_eq_v"); err != nil {
		return Config{}, err
	}
	if g.DoubleWideMLP, err = rawBool(raw, "use_double_wide_mlp"); err != nil {
		return Config{}, err
	}
	if b, err := rawBool(raw, "attention_bias"); err != nil {
		return Config{}, err
	} else if b {
		return Config{}, fmt.Errorf("attention_bias true is not supported for gemma4 (biases on q, k, v and o_proj)")
	}
	if c.MoE, err = parseGemma4MoE(raw); err != nil {
		return Config{}, err
	}
	if d, err := rawNumber(raw, "attention_dropout", 0, true); err != nil {
		return Config{}, err
	} else if d != 0 {
		return Config{}, fmt.Errorf("attention_dropout %g is not supported (0 only: the training forward has no attention dropout)", d)
	}
	if v, ok := raw["use_bidirectional_attention"]; ok && v != nil {
		return Config{}, fmt.Errorf("use_bidirectional_attention %s is not supported (causal attention only)", jsonText(v))
	}
	if v, ok := raw["hidden_activation"]; ok && v != "gelu_pytorch_tanh" {
		return Config{}, fmt.Errorf("hidden_activation %s is not supported for gemma4 (gelu_pytorch_tanh only)", jsonText(v))
	}
	if q, ok := raw["quantization_config"]; ok && q != nil {
		return Config{}, fmt.Errorf("quantization_config is not supported (a quantized checkpoint; load its unquantized weights)")
	}
	c.TorchDType, _ = raw["torch_dtype"].(string)
	if d, ok := raw["dtype"].(string); ok {
		c.TorchDType = d
	}
	if err := c.gemma4LayerTypes(raw); err != nil {
		return Config{}, err
	}
	if err := c.gemma4Rope(raw); err != nil {
		return Config{}, err
	}
	if err := c.gemma4FullShape(raw); err != nil {
		return Config{}, err
	}
	return c, nil
}

// parseGemma4MoE reads the MoE block's keys: with enable_moe_block true
// every layer adds Gemma4TextRouter's router and num_experts GELU-tanh
// experts of moe_intermediate_size, top_k_experts a token (no defaults:
// Gemma4TextConfig's are null), beside its dense MLP; the router always
// divides the top-k probabilities by their sum. Without it the keys are
// not read, as in transformers.
func parseGemma4MoE(raw map[string]any) (MoE, error) {
	on, err := rawBool(raw, "enable_moe_block")
	if err != nil || !on {
		return MoE{}, err
	}
	m := MoE{NormTopKProb: true, SparseStep: 1}
	for _, f := range []struct {
		key string
		dst *int
	}{{"num_experts", &m.Experts}, {"top_k_experts", &m.ExpertsPerToken}, {"moe_intermediate_size", &m.Intermediate}} {
		v, err := rawNumber(raw, f.key, 0, true)
		if err != nil {
			return MoE{}, err
		}
		if v <= 0 || v != math.Trunc(v) || v > 1<<15 {
			return MoE{}, fmt.Errorf("%s must be a positive whole number with enable_moe_block, got %s", f.key, jsonText(raw[f.key]))
		}
		*f.dst = int(v)
	}
	return m, nil
}

// gemma4Architectures refuses an architectures list naming a class other
// than those given.
func gemma4Architectures(raw map[string]any, classes ...string) error {
	v, ok := raw["architectures"]
	if !ok || v == nil {
		return nil
	}
	l, ok := v.([]any)
	if !ok {
		return fmt.Errorf("architectures must be a list of class names, got %v", v)
	}
	for _, a := range l {
		if s, _ := a.(string); !slices.Contains(classes, s) {
			return fmt.Errorf("architectures %v: %v is not supported (model_type %v is loaded as %s)", l, a, raw["model_type"], classes[0])
		}
	}
	return nil
}

// rawBool2 is rawBool with def for an absent key.
func rawBool2(raw map[string]any, key string, def bool) (bool, error) {
	if _, ok := raw[key]; !ok {
		return def, nil
	}
	return rawBool(raw, key)
}

// gemma4LayerTypes reads layer_types, or makes Gemma4TextConfig's
// default (every sixth layer full, the others sliding); the last layer is
// full attention, as transformers forces it.
func (c *Config) gemma4LayerTypes(raw map[string]any) error {
	if c.Layers <= 0 || c.Layers > maxMoELayers {
		return fmt.Errorf("num_hidden_layers must be in 1..%d, got %d", maxMoELayers, c.Layers)
	}
	c.LayerTypes = make([]string, c.Layers)
	if v, ok := raw["layer_types"]; ok && v != nil {
		l, ok := v.([]any)
		if !ok || len(l) != c.Layers {
			return fmt.Errorf("layer_types must list one type for each of the %d layers, got %s", c.Layers, jsonText(v))
		}
		for i, t := range l {
			if t != FullAttention && t != SlidingAttention {
				return fmt.Errorf("layer_types[%d] %s is not supported for gemma4 (full_attention, sliding_attention)", i, jsonText(t))
			}
			c.LayerTypes[i] = t.(string)
		}
	} else {
		for i := range c.LayerTypes {
			c.LayerTypes[i] = SlidingAttention
			if (i+1)%6 == 0 {
				c.LayerTypes[i] = FullAttention
			}
		}
	}
	c.LayerTypes[c.Layers-1] = FullAttention
	return nil
}

// gemma4Rope reads rope_parameters, a RoPE per layer type (null:
// Gemma4TextConfig's: default with theta 10000 for sliding layers,
// proportional with a quarter turned and theta 1e6 for full ones).
func (c *Config) gemma4Rope(raw map[string]any) error {
	g := c.Gemma
	c.RopeTheta, g.GlobalRope, g.GlobalTheta, g.GlobalPartial = 10000, "proportional", 1e6, 0.25
	v, ok := raw["rope_parameters"]
	if !ok || v == nil {
		return nil
	}
	byType, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("rope_parameters must be an object by layer type, got %s", jsonText(v))
	}
	for t, p := range byType {
		params, ok := p.(map[string]any)
		if !ok || (t != FullAttention && t != SlidingAttention) {
			return fmt.Errorf("rope_parameters.%s is not supported (an object for full_attention and sliding_attention)", t)
		}
		typ, _ := params["rope_type"].(string)
		theta, err := rawNumber(params, "rope_theta", math.NaN(), false)
		if err != nil {
			return fmt.Errorf("rope_parameters.%s: %w", t, err)
		}
		if math.IsNaN(theta) || !(theta > 0) {
			return fmt.Errorf("rope_parameters.%s: rope_theta must be positive, got %s", t, jsonText(params["rope_theta"]))
		}
		partial, err := rawNumber(params, "partial_rotary_factor", 1, false)
		if err != nil {
			return fmt.Errorf("rope_parameters.%s: %w", t, err)
		}
		factor, err := rawNumber(params, "factor", 1, false)
		if err != nil {
			return fmt.Errorf("rope_parameters.%s: %w", t, err)
		}
		for k := range params {
			if k != "rope_type" && k != "rope_theta" && !(typ == "proportional" && (k == "partial_rotary_factor" || k == "factor")) {
				return fmt.Errorf("rope_parameters.%s.%s is not supported for rope_type %q", t, k, typ)
			}
		}
		switch {
		case t == SlidingAttention && typ == "default":
			c.RopeTheta = theta
		case t == FullAttention && (typ == "default" || typ == "proportional"):
			if factor != 1 {
				return fmt.Errorf("rope_parameters.%s.factor %g is not supported (1 only)", t, factor)
			}
			if !(partial > 0 && partial <= 1) {
				return fmt.Errorf("rope_parameters.%s.partial_rotary_factor must be in (0, 1], got %g", t, partial)
			}
			g.GlobalRope, g.GlobalTheta, g.GlobalPartial = typ, theta, partial
		default:
			return fmt.Errorf("rope_parameters.%s.rope_type %q is not supported for gemma4 (sliding_attention: default; "+
				"full_attention: proportional, default)", t, typ)
		}
	}
	return nil
}

// gemma4FullShape reads the full layers' head size and key/value heads:
// per_layer_config (as transformers 5.25 saves them: each full layer's
// head_dim and num_key_value_heads), else global_head_dim (default 512)
// and, with attention_k_eq_v, num_global_key_value_heads.
func (c *Config) gemma4FullShape(raw map[string]any) error {
	g := c.Gemma
	g.GlobalHeadDim, g.GlobalKVHeads = 512, c.KVHeads
	if v, ok := raw["per_layer_config"]; ok && v != nil {
		per, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("per_layer_config must be an object by layer index, got %s", jsonText(v))
		}
		seen := false
		for i, t := range c.LayerTypes {
			o, ok := per[strconv.Itoa(i)]
			if t == SlidingAttention {
				if ok {
					return fmt.Errorf("per_layer_config.%d is not supported (a sliding layer's shape is the config's)", i)
				}
				continue
			}
			over, isObj := o.(map[string]any)
			if !ok || !isObj {
				return fmt.Errorf("per_layer_config.%d: full-attention layer %d has no shape (want head_dim and num_key_value_heads)", i, i)
			}
			hd, err := rawNumber(over, "head_dim", float64(c.HeadDim), false)
			if err != nil {
				return fmt.Errorf("per_layer_config.%d: %w", i, err)
			}
			kv, err := rawNumber(over, "num_key_value_heads", float64(c.KVHeads), false)
			if err != nil {
				return fmt.Errorf("per_layer_config.%d: %w", i, err)
			}
			for k := range over {
				if k != "head_dim" && k != "num_key_value_heads" {
					return fmt.Errorf("per_layer_config.%d.%s is not supported (head_dim and num_key_value_heads only)", i, k)
				}
			}
			if seen && (int(hd) != g.GlobalHeadDim || int(kv) != g.GlobalKVHeads) {
				return fmt.Errorf("per_layer_config.%d: full-attention layers of different shapes are not supported", i)
			}
			g.GlobalHeadDim, g.GlobalKVHeads, seen = int(hd), int(kv), true
		}
		for k := range per {
			if i, err := strconv.Atoi(k); err != nil || i < 0 || i >= c.Layers {
				return fmt.Errorf("per_layer_config.%s is not a layer", k)
			}
		}
		return nil
	}
	hd, err := rawNumber(raw, "global_head_dim", 512, false)
	if err != nil {
		return err
	}
	g.GlobalHeadDim = int(hd)
	if kv, err := rawNumber(raw, "num_global_key_value_heads", 0, true); err != nil {
		return err
	} else if kv > 0 && g.KEqV {
		g.GlobalKVHeads = int(kv)
	}
	return nil
}

// validateGemma4 checks a Gemma 4 config's fields are in range.
func (c Config) validateGemma4() error {
	g := c.Gemma
	pos := []struct {
		name string
		v    int
	}{{"vocab_size", c.Vocab}, {"hidden_size", c.Hidden}, {"intermediate_size", c.Intermediate},
		{"num_hidden_layers", c.Layers}, {"num_attention_heads", c.Heads}, {"num_key_value_heads", c.KVHeads},
		{"head_dim", c.HeadDim}, {"sliding_window", g.SlidingWindow}, {"the full layers' head_dim", g.GlobalHeadDim},
		{"the full layers' num_key_value_heads", g.GlobalKVHeads}}
	for _, p := range pos {
		if p.v <= 0 {
			return fmt.Errorf("%s must be positive, got %d", p.name, p.v)
		}
	}
	if len(c.LayerTypes) != c.Layers {
		return fmt.Errorf("layer_types must list one type for each of the %d layers", c.Layers)
	}
	for _, kv := range []int{c.KVHeads, g.GlobalKVHeads} {
		if c.Heads%kv != 0 {
			return fmt.Errorf("num_attention_heads (%d) must be a multiple of num_key_value_heads (%d)", c.Heads, kv)
		}
	}
	for _, hd := range []int{c.HeadDim, g.GlobalHeadDim} {
		if hd > maxHeadDim || hd%2 != 0 {
			return fmt.Errorf("head_dim %d is not supported (even, at most %d)", hd, maxHeadDim)
		}
	}
	if !(c.RMSEps > 0 && c.RMSEps < 1) {
		return fmt.Errorf("rms_norm_eps must be in (0, 1), got %g", c.RMSEps)
	}
	if g.KVSharedLayers < 0 || g.KVSharedLayers >= c.Layers {
		return fmt.Errorf("num_kv_shared_layers must be in 0..%d, got %d", c.Layers-1, g.KVSharedLayers)
	}
	first := c.Layers - g.KVSharedLayers
	for i := first; i < c.Layers; i++ {
		if !slices.Contains(c.LayerTypes[:first], c.LayerTypes[i]) {
			return fmt.Errorf("num_kv_shared_layers %d: layer %d (%s) has no earlier layer of its type to share keys and values with",
				g.KVSharedLayers, i, c.LayerTypes[i])
		}
	}
	if g.PerLayerDim < 0 || (g.PerLayerDim > 0 && g.PerLayerVocab <= 0) {
		return fmt.Errorf("hidden_size_per_layer_input %d and vocab_size_per_layer_input %d must be positive", g.PerLayerDim, g.PerLayerVocab)
	}
	if g.PerLayerVocab > c.Vocab && g.PerLayerDim > 0 {
		return fmt.Errorf("vocab_size_per_layer_input %d exceeds vocab_size %d (the per-layer inputs are looked up by token id)", g.PerLayerVocab, c.Vocab)
	}
	if g.FinalSoftcap < 0 {
		return fmt.Errorf("final_logit_softcapping must be positive, got %g", g.FinalSoftcap)
	}
	if m := c.MoE; m.Experts != 0 {
		switch {
		case m.Experts < 0 || m.Experts > 32767 || m.Intermediate <= 0:
			return fmt.Errorf("num_experts %d and moe_intermediate_size %d must be positive", m.Experts, m.Intermediate)
		case m.ExpertsPerToken <= 0 || m.ExpertsPerToken > m.Experts:
			return fmt.Errorf("top_k_experts %d must be in 1..num_experts (%d)", m.ExpertsPerToken, m.Experts)
		case !m.NormTopKProb || m.SparseStep != 1 || len(m.MLPOnlyLayers) > 0 || m.SharedIntermediate != 0 ||
			m.OutputRouterLogits || m.Latent != 0 || m.Groups != 0:
			return fmt.Errorf("gemma4's MoE block is in every layer, with Gemma4TextRouter's softmax router and no shared expert")
		}
	}
	return nil
}

// globalRopeFrequencies are a full layer's RoPE inverse frequencies over
// half its head: proportional RoPE's (transformers'
// _compute_proportional_rope_parameters) turn the first
// int(partial * head_dim / 2) pairs at theta^(-2j/head_dim) and leave the
// rest (frequency 0); default RoPE turns all.
func (g Gemma4) globalRopeFrequencies() ([]float64, error) {
	d := g.GlobalHeadDim
	angles := d / 2
	if g.GlobalRope == "proportional" {
		angles = int(math.Floor(g.GlobalPartial * float64(d) / 2))
	}
	turned, err := ropeInvFreq(g.GlobalTheta, d, angles)
	if err != nil {
		return nil, err
	}
	return append(turned, make([]float64, d/2-angles)...), nil
}

// fillGemma4 sets a Gemma 4 model's part of the shim's config.
func (c Config) fillGemma4(cc *C.ar_model_config) error {
	g := c.Gemma
	inv, err := g.globalRopeFrequencies()
	if err != nil {
		return err
	}
	cc.gemma = 1
	cc.sliding_window = C.int64_t(g.SlidingWindow)
	for i, t := range c.LayerTypes {
		if t == SlidingAttention {
			cc.sliding_layer[i] = 1
		}
	}
	cc.global_head_dim, cc.global_kv_heads = C.int64_t(g.GlobalHeadDim), C.int64_t(g.GlobalKVHeads)
	for j, f := range inv {
		cc.global_rope_inv_freq[j] = C.double(f)
	}
	cc.k_eq_v = cbool(g.KEqV)
	cc.kv_shared_layers = C.int64_t(g.KVSharedLayers)
	cc.double_wide_mlp = cbool(g.DoubleWideMLP)
	cc.per_layer_dim, cc.per_layer_vocab = C.int64_t(g.PerLayerDim), C.int64_t(g.PerLayerVocab)
	cc.final_softcap = C.double(g.FinalSoftcap)
	cc.qk_norm = 1
	return nil
}

// gemma4Skips says whether a checkpoint tensor is one a Gemma 4 text model
// skips by name: the multimodal checkpoint's towers, and the k_proj,
// v_proj and their norms a kv-shared layer has no use for (transformers
// ignores them on load).
func (c Config) gemma4Skips(name string) bool {
	for _, p := range gemma4Skipped {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	if rest, ok := strings.CutPrefix(name, wrappedTextPrefix); ok && c.Wrapped {
		name = "model." + rest
	}
	i, rest, ok := layerParam(name)
	if !ok || i < c.Layers-c.Gemma.KVSharedLayers || i >= c.Layers {
		return false
	}
	for _, p := range []string{"self_attn.k_proj.", "self_attn.v_proj.", "self_attn.k_norm.", "self_attn.v_norm."} {
		if strings.HasPrefix(rest, p) {
			return true
		}
	}
	return false
}

// jsonGemma4 renders a Gemma 4 config as the text model's config.json
// (Gemma4ForCausalLM): the keys read, with the shape fields set, and every
// Gemma 4 setting the keys read do not hold (a model made from scratch
// has none) written from the struct, as Gemma4TextConfig names it.
func (c Config) jsonGemma4() ([]byte, error) {
	g := c.Gemma
	out := map[string]any{}
	for k, v := range c.Raw {
		out[k] = v
	}
	out["model_type"], out["architectures"] = gemma4Type, []string{"Gemma4ForCausalLM"}
	out["vocab_size"], out["hidden_size"], out["intermediate_size"] = c.Vocab, c.Hidden, c.Intermediate
	out["num_hidden_layers"], out["num_attention_heads"], out["num_key_value_heads"] = c.Layers, c.Heads, c.KVHeads
	out["head_dim"], out["rms_norm_eps"], out["tie_word_embeddings"] = c.HeadDim, c.RMSEps, c.TieEmbeddings
	orNull := func(v float64) any {
		if v == 0 {
			return nil
		}
		return v
	}
	full := map[string]any{"rope_type": g.GlobalRope, "rope_theta": g.GlobalTheta}
	if g.GlobalRope == "proportional" {
		full["partial_rotary_factor"] = g.GlobalPartial
	}
	settings := map[string]any{"layer_types": c.LayerTypes, "sliding_window": g.SlidingWindow,
		"attention_k_eq_v": g.KEqV, "num_kv_shared_layers": g.KVSharedLayers, "use_double_wide_mlp": g.DoubleWideMLP,
		"hidden_size_per_layer_input": orNull(float64(g.PerLayerDim)), "vocab_size_per_layer_input": g.PerLayerVocab,
		"final_logit_softcapping": orNull(g.FinalSoftcap), "max_position_embeddings": c.MaxPositions,
		"bos_token_id": c.BOS, "eos_token_id": c.EOS, "hidden_activation": "gelu_pytorch_tanh",
		"rope_parameters": map[string]any{SlidingAttention: map[string]any{"rope_type": "default", "rope_theta": c.RopeTheta},
			FullAttention: full}}
	if _, ok := out["per_layer_config"]; !ok {
		if !g.KEqV && g.GlobalKVHeads != c.KVHeads {
			return nil, fmt.Errorf("gemma4 config: full layers of %d key/value heads (not num_key_value_heads %d) without "+
				"attention_k_eq_v cannot be written", g.GlobalKVHeads, c.KVHeads)
		}
		settings["global_head_dim"] = g.GlobalHeadDim
		if g.KEqV {
			settings["num_global_key_value_heads"] = g.GlobalKVHeads
		}
	}
	for k, v := range settings {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	// Written as a float (30.0, not 30, which encoding/json writes for a
	// whole number): Gemma4TextConfig takes a float or null only.
	if g.FinalSoftcap != 0 {
		s := strconv.FormatFloat(g.FinalSoftcap, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		out["final_logit_softcapping"] = json.Number(s)
	}
	out["enable_moe_block"] = c.MoE.Experts > 0
	if c.MoE.Experts > 0 {
		out["num_experts"], out["top_k_experts"] = c.MoE.Experts, c.MoE.ExpertsPerToken
		out["moe_intermediate_size"] = c.MoE.Intermediate
	}
	return json.MarshalIndent(out, "", "  ")
}

// gemma4LayerKinds is layerKinds for Gemma 4: each layer its own kind,
// from the shapes of the whole model on the meta device (num_hidden_layers
// is at most maxMoELayers).
func gemma4LayerKinds(cfg Config, valueHead bool) (map[layerKind]layerParams, []ParamShape, error) {
	shapes, err := ParamShapes(cfg, valueHead)
	if err != nil {
		return nil, nil, err
	}
	kinds := map[layerKind]layerParams{}
	var others []ParamShape
	for _, ps := range shapes {
		i, rest, ok := layerParam(ps.Name)
		if !ok {
			others = append(others, ps)
			continue
		}
		k := cfg.layerKind(i)
		lp, found := kinds[k]
		if !found {
			lp = layerParams{shapes: map[string][]int64{}}
		}
		lp.shapes[rest] = ps.Shape
		lp.names = append(lp.names, rest)
		kinds[k] = lp
	}
	return kinds, others, nil
}

// gemma4LacksProj says whether layer i of a Gemma 4 model of c lacks the
// attention projection target that other layers have: a kv-shared layer's
// k_proj and v_proj (it reads an earlier layer's keys and values), an
// attention_k_eq_v full layer's v_proj (its values are its keys'
// projection). PEFT adapts the modules transformers builds, so it puts no
// adapter there either. False for a model that is not Gemma 4.
func (c Config) gemma4LacksProj(i int, target string) bool {
	if !c.IsGemma4() || (target != "k_proj" && target != "v_proj") {
		return false
	}
	if i >= c.Layers-c.Gemma.KVSharedLayers {
		return true
	}
	return target == "v_proj" && c.Gemma.KEqV && c.LayerTypes[i] == FullAttention
}
