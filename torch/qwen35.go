package torch

import (
	"fmt"
	"slices"
	"strings"
)

// Qwen3.5 and Qwen3.6 (transformers' qwen3_5): a hybrid decoder whose
// layers are Gated DeltaNet layers (linear_attention) or gated attention
// layers (full_attention). Its config comes in two forms: the text model's
// alone (model_type qwen3_5_text, Qwen3_5ForCausalLM, weights under
// model.*) and the multimodal checkpoint's (model_type qwen3_5,
// Qwen3_5ForConditionalGeneration), whose text settings sit in
// text_config and whose text weights sit under model.language_model.,
// beside a vision tower (model.visual.*) and multi-token-prediction
// weights (mtp.*) that the text model does not use. Qwen3.5 MoE
// (qwen3_5_moe, Qwen3.5-35B-A3B and larger) is the same stack with every
// MLP sparse (moe.go), in the same two forms (model_type qwen3_5_moe_text
// alone, qwen3_5_moe multimodal).

// qwen35 and qwen35MoE are the text models' model_types, the families'
// names here.
const (
	qwen35    = "qwen3_5_text"
	qwen35MoE = "qwen3_5_moe_text"
)

// wrappedQwen35 maps each multimodal model_type to its text model's and
// the classes a config.json of it may name (the multimodal and the
// causal-LM class).
var wrappedQwen35 = map[string]struct {
	text    string
	classes []string
}{
	"qwen3_5":     {qwen35, []string{"Qwen3_5ForConditionalGeneration", "Qwen3_5ForCausalLM"}},
	"qwen3_5_moe": {qwen35MoE, []string{"Qwen3_5MoeForConditionalGeneration", "Qwen3_5MoeForCausalLM"}},
}

// IsQwen35 reports whether the model is a Qwen3.5 text model, dense or
// MoE (the hybrid stack).
func (c Config) IsQwen35() bool { return c.ModelType == qwen35 || c.ModelType == qwen35MoE }

// Layer types of Config.LayerTypes.
const (
	FullAttention   = "full_attention"
	LinearAttention = "linear_attention"
)

// wrappedTextPrefix is where a multimodal Qwen3.5 checkpoint keeps the
// text model's weights in place of model.
const wrappedTextPrefix = "model.language_model."

// skippedPrefixes are the checkpoint tensors a Qwen3.5 text model does not
// load, as transformers' Qwen3_5ForCausalLM skips them: the vision tower
// and the multi-token-prediction head.
var skippedPrefixes = []string{"model.visual.", "mtp."}

// Hybrid reports whether some layer is a Gated DeltaNet layer.
func (c Config) Hybrid() bool { return slices.Contains(c.LayerTypes, LinearAttention) }

// RotaryDim is the number of leading dimensions of a head RoPE rotates:
// head_dim times partial_rotary_factor (Qwen3.5: a quarter), else all.
func (c Config) RotaryDim() int {
	if c.PartialRotary > 0 && c.PartialRotary < 1 {
		return int(float64(c.HeadDim) * c.PartialRotary)
	}
	return c.HeadDim
}

// checkpointName is the key the checkpoint holds the parameter name under:
// a multimodal Qwen3.5 checkpoint keeps the text model's model.* under
// model.language_model., a Nemotron-H checkpoint under backbone.
func (c Config) checkpointName(name string) string {
	if rest, ok := strings.CutPrefix(name, "model."); ok && c.Wrapped {
		return wrappedTextPrefix + rest
	} else if ok && c.IsNemotron() {
		return nemotronCheckpointPrefix + rest
	}
	return name
}

// skippedTensor says whether a checkpoint tensor is one the model skips
// by name (the vision tower and MTP weights of a Qwen3.5 checkpoint, the
// MTP weights of a Nemotron-H one).
func (c Config) skippedTensor(name string) bool {
	if c.IsGemma4() {
		return c.gemma4Skips(name)
	}
	if c.IsNemotron() {
		return nemotronSkipped(name)
	}
	if !c.IsQwen35() {
		return false
	}
	for _, p := range skippedPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// unwrapQwen35 returns the text config of a multimodal Qwen3.5 config.json
// (model_type qwen3_5 or qwen3_5_moe, wrappedQwen35), with what the text model takes from the outer
// config (token ids, dtype) filled in where text_config lacks it. Refused
// by name: another class, a quantization_config, a text_config of another
// model_type, and tie_word_embeddings that differ between the two (the
// multimodal class ties by the outer key, the causal-LM class by
// text_config's: they would compute different models).
func unwrapQwen35(outer map[string]any) (map[string]any, error) {
	mt := fmt.Sprint(outer["model_type"])
	w := wrappedQwen35[mt]
	if q, ok := outer["quantization_config"]; ok && q != nil {
		return nil, fmt.Errorf("quantization_config is not supported (a quantized checkpoint; load its unquantized weights)")
	}
	if v, ok := outer["architectures"]; ok && v != nil {
		archs, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("architectures must be a list of class names, got %v", v)
		}
		for _, a := range archs {
			if !slices.Contains(w.classes, fmt.Sprint(a)) {
				return nil, fmt.Errorf("architectures %v: %v is not supported (model_type %s is loaded as %s, its text model)",
					archs, a, mt, w.classes[1])
			}
		}
	}
	tc, ok := outer["text_config"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("model_type %s needs text_config, an object, got %s", mt, jsonText(outer["text_config"]))
	}
	text := map[string]any{}
	for k, v := range tc {
		text[k] = v
	}
	if tm, ok := text["model_type"]; !ok {
		text["model_type"] = w.text
	} else if tm != w.text {
		return nil, fmt.Errorf("text_config.model_type %s is not supported in a %s config (%s)", jsonText(tm), mt, w.text)
	}
	outerTie, err := rawBool(outer, "tie_word_embeddings")
	if err != nil {
		return nil, err
	}
	textTie, err := rawBool(text, "tie_word_embeddings")
	if err != nil {
		return nil, fmt.Errorf("text_config.%w", err)
	}
	if outerTie != textTie {
		return nil, fmt.Errorf("tie_word_embeddings %v and text_config.tie_word_embeddings %v differ: transformers' "+
			"%s ties by the first, %s by the second", outerTie, textTie, w.classes[0], w.classes[1])
	}
	for _, k := range []string{"bos_token_id", "eos_token_id", "pad_token_id", "dtype", "torch_dtype"} {
		if v, ok := text[k]; (!ok || v == nil) && outer[k] != nil {
			text[k] = outer[k]
		}
	}
	return text, nil
}

// parseQwen35 reads the Qwen3.5 keys of a text config raw into c, with
// Qwen3_5TextConfig's defaults (Qwen3_5MoeTextConfig's are the same): the Gated DeltaNet sizes, the layer types
// (layer_types, else every full_attention_interval-th layer full, the
// rest linear), partial_rotary_factor (0.25) and the attention output
// gate (attn_output_gate false is refused: transformers 5's Qwen3.5 always
// gates).
func parseQwen35(raw map[string]any, c *Config) error {
	for _, f := range []struct {
		key string
		v   *int
		def int
	}{{"linear_num_key_heads", &c.LinearKeyHeads, 16}, {"linear_num_value_heads", &c.LinearValueHeads, 32},
		{"linear_key_head_dim", &c.LinearKeyDim, 128}, {"linear_value_head_dim", &c.LinearValueDim, 128},
		{"linear_conv_kernel_dim", &c.LinearConvKernel, 4}} {
		n, err := rawNumber(raw, f.key, float64(f.def), false)
		if err != nil {
			return err
		}
		if n != float64(int(n)) || n <= 0 {
			return fmt.Errorf("%s must be a positive whole number, got %v", f.key, n)
		}
		*f.v = int(n)
	}
	if c.LinearValueHeads%c.LinearKeyHeads != 0 {
		return fmt.Errorf("linear_num_value_heads (%d) must be a multiple of linear_num_key_heads (%d)", c.LinearValueHeads, c.LinearKeyHeads)
	}
	if gate, ok := raw["attn_output_gate"]; ok && gate != true {
		return fmt.Errorf("attn_output_gate %s is not supported (Qwen3.5's attention is gated: true only)", jsonText(gate))
	}
	if v, ok := raw["layer_types"]; ok && v != nil {
		l, ok := v.([]any)
		if !ok || len(l) != c.Layers {
			return fmt.Errorf("layer_types must list one type for each of the %d layers, got %v", c.Layers, v)
		}
		for i, t := range l {
			if t != FullAttention && t != LinearAttention {
				return fmt.Errorf("layer_types[%d] %v is not supported (full_attention or linear_attention)", i, jsonText(t))
			}
			c.LayerTypes = append(c.LayerTypes, t.(string))
		}
	} else {
		every, err := rawNumber(raw, "full_attention_interval", 4, false)
		if err != nil {
			return err
		}
		if every != float64(int(every)) || every < 1 {
			return fmt.Errorf("full_attention_interval must be a positive whole number, got %v", every)
		}
		if c.Layers > maxMoELayers { // before a type is listed for each layer
			return fmt.Errorf("num_hidden_layers %d is not supported for %s (at most %d)", c.Layers, c.ModelType, maxMoELayers)
		}
		for i := range c.Layers {
			t := LinearAttention
			if (i+1)%int(every) == 0 {
				t = FullAttention
			}
			c.LayerTypes = append(c.LayerTypes, t)
		}
	}
	c.PartialRotary = 0.25
	top, err := rawNumber(raw, "partial_rotary_factor", c.PartialRotary, true)
	if err != nil {
		return err
	}
	c.PartialRotary = top
	if p, ok := raw["rope_parameters"].(map[string]any); ok {
		if v, ok := p["partial_rotary_factor"]; ok && v != nil {
			f, ok := v.(float64)
			if !ok {
				return fmt.Errorf("rope_parameters.partial_rotary_factor must be a number, got %s", jsonText(v))
			}
			c.PartialRotary = f
		}
	}
	if !(c.PartialRotary > 0 && c.PartialRotary <= 1) {
		return fmt.Errorf("partial_rotary_factor must be in (0, 1], got %g", c.PartialRotary)
	}
	if c.Rope.Type != "" {
		return fmt.Errorf("rope_type %q is not supported for %s (default only)", c.Rope.Type, c.ModelType)
	}
	return nil
}

// validateQwen35 checks the Qwen3.5 fields of c.
func (c Config) validateQwen35() error {
	if len(c.LayerTypes) != c.Layers {
		return fmt.Errorf("%d layer types for %d layers", len(c.LayerTypes), c.Layers)
	}
	if c.Layers > maxMoELayers {
		return fmt.Errorf("num_hidden_layers %d is not supported for %s (at most %d)", c.Layers, c.ModelType, maxMoELayers)
	}
	if d := c.RotaryDim(); d <= 0 || d%2 != 0 {
		return fmt.Errorf("partial_rotary_factor %g of head_dim %d gives %d RoPE dimensions, which must be positive and even",
			c.PartialRotary, c.HeadDim, d)
	}
	if c.Hybrid() && (c.LinearKeyHeads <= 0 || c.LinearValueHeads <= 0 || c.LinearKeyDim <= 0 || c.LinearValueDim <= 0 ||
		c.LinearConvKernel <= 0 || c.LinearValueHeads%c.LinearKeyHeads != 0) {
		return fmt.Errorf("the Gated DeltaNet sizes must be positive, linear_num_value_heads a multiple of linear_num_key_heads")
	}
	return nil
}

// jsonQwen35 sets the Qwen3.5 keys of config.json in out, the text model's
// form: transformers loads it as Qwen3_5ForCausalLM (Qwen3_5MoeForCausalLM).
func (c Config) jsonQwen35(out, set map[string]any) {
	set["layer_types"] = c.LayerTypes
	set["linear_num_key_heads"], set["linear_num_value_heads"] = c.LinearKeyHeads, c.LinearValueHeads
	set["linear_key_head_dim"], set["linear_value_head_dim"] = c.LinearKeyDim, c.LinearValueDim
	set["linear_conv_kernel_dim"] = c.LinearConvKernel
	rope, _ := set["rope_parameters"].(map[string]any)
	if rope == nil {
		rope = map[string]any{"rope_type": "default", "rope_theta": c.RopeTheta}
		set["rope_parameters"] = rope
		delete(set, "rope_theta")
		delete(out, "rope_theta")
		delete(out, "rope_scaling")
	}
	rope["partial_rotary_factor"] = c.PartialRotary
	if old, ok := out["rope_parameters"].(map[string]any); ok {
		for _, k := range []string{"mrope_section", "mrope_interleaved"} {
			if v, ok := old[k]; ok {
				rope[k] = v
			}
		}
	}
	delete(out, "partial_rotary_factor")
}
