package torch

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/agentrl/agentrl/internal/hubcache"
	"github.com/agentrl/agentrl/internal/regular"
)

// Config is the part of a Hugging Face config.json that shapes a Qwen2,
// Qwen3 or Llama decoder, read from transformers 4 and 5 configs alike.
// Raw keeps every key of the file so Save writes back what it read, with
// the shape fields updated. docs/models.md lists every key that changes
// the math and what is done with it.
type Config struct {
	ModelType     string  `json:"model_type"`
	Vocab         int     `json:"vocab_size"`
	Hidden        int     `json:"hidden_size"`
	Intermediate  int     `json:"intermediate_size"`
	Layers        int     `json:"num_hidden_layers"`
	Heads         int     `json:"num_attention_heads"`
	KVHeads       int     `json:"num_key_value_heads"`
	HeadDim       int     `json:"head_dim"`
	RMSEps        float64 `json:"rms_norm_eps"`
	RopeTheta     float64 `json:"-"` // rope_theta, top-level (transformers 4) or in rope_parameters (5)
	Rope          RoPE    `json:"-"` // the RoPE type and its parameters (plain RoPE when zero)
	TieEmbeddings bool    `json:"tie_word_embeddings"`
	MaxPositions  int     `json:"max_position_embeddings"`
	AttentionBias bool    `json:"attention_bias"` // biases on q, k, v and o_proj: refused (Qwen2's q/k/v biases are QKVBias)
	TorchDType    string  `json:"-"`              // torch_dtype (transformers 4) or dtype (5)
	BOS           int     `json:"bos_token_id"`
	EOS           int     `json:"eos_token_id"` // the first of a list

	// Qwen3.5 (qwen35.go): each layer's type (nil: every layer full
	// attention), the Gated DeltaNet sizes, the share of a head RoPE
	// turns, and whether the checkpoint is the multimodal one (text
	// settings in text_config, text weights under model.language_model.).
	LayerTypes       []string `json:"-"`
	LinearKeyHeads   int      `json:"-"` // linear_num_key_heads
	LinearValueHeads int      `json:"-"` // linear_num_value_heads
	LinearKeyDim     int      `json:"-"` // linear_key_head_dim
	LinearValueDim   int      `json:"-"` // linear_value_head_dim
	LinearConvKernel int      `json:"-"` // linear_conv_kernel_dim
	PartialRotary    float64  `json:"-"` // partial_rotary_factor (0: 1)
	Wrapped          bool     `json:"-"`

	// MoE is a qwen3_moe or qwen3_5_moe model's mixture-of-experts
	// settings (zero for the dense families).
	MoE MoE `json:"-"`

	// Window is a Qwen2 or Qwen3 model's sliding_window where some layer
	// slides (0: none), WindowLayers which layers do.
	Window       int    `json:"-"`
	WindowLayers []bool `json:"-"`

	// Gemma is a Gemma 4 model's own settings (gemma4.go); nil for the
	// other families.
	Gemma *Gemma4 `json:"-"`

	// Nemotron is a nemotron_h model's blocks and Mamba-2 sizes
	// (nemotron.go; zero for the other families).
	Nemotron Nemotron `json:"-"`

	Raw map[string]any `json:"-"`
}

// MoE is the mixture-of-experts part of a Qwen3 MoE or Qwen3.5 MoE config
// (transformers' Qwen3MoeConfig, Qwen3_5MoeTextConfig): which layers are
// sparse, their experts, shared expert and router, and the routers'
// load-balancing loss.
type MoE struct {
	Experts            int     // num_experts (transformers 5 writes num_local_experts)
	ExpertsPerToken    int     // num_experts_per_tok: the top-k
	Intermediate       int     // moe_intermediate_size: each expert's width
	NormTopKProb       bool    // norm_topk_prob: the top-k probabilities divided by their sum
	SharedIntermediate int     // shared_expert_intermediate_size: the shared expert's width (0: none; Qwen3.5 MoE)
	SparseStep         int     // decoder_sparse_step: layer i is sparse when (i+1) % step == 0 ...
	MLPOnlyLayers      []int   // mlp_only_layers: ... and i is not listed here
	OutputRouterLogits bool    // output_router_logits: the aux loss joins the training loss
	RouterAuxLossCoef  float64 // router_aux_loss_coef: its weight there

	// Nemotron-H's sigmoid router (nemotron_moe.go; zero elsewhere).
	Groups    int     // n_group: the experts' groups
	TopKGroup int     // topk_group: the groups a token chooses within
	Scaling   float64 // routed_scaling_factor: multiplies the experts' weights
	Latent    int     // moe_latent_size: the experts' input and output width (0: hidden_size)
}

// SparseLayer reports whether layer i is a mixture-of-experts layer, as
// Qwen3MoeDecoderLayer decides it (a Nemotron-H model: a moe block).
func (c Config) SparseLayer(i int) bool {
	m := c.MoE
	if c.IsNemotron() {
		return m.Experts > 0 && i < len(c.Nemotron.Blocks) && c.Nemotron.Blocks[i] == MoEBlock
	}
	return m.Experts > 0 && m.SparseStep > 0 && (i+1)%m.SparseStep == 0 && !slices.Contains(m.MLPOnlyLayers, i)
}

// Sparse reports whether any layer is a mixture-of-experts layer.
func (c Config) Sparse() bool {
	for i := range c.Layers {
		if c.SparseLayer(i) {
			return true
		}
	}
	return false
}

// QKVBias reports whether the attention projections q, k, v carry biases
// (Qwen2's always do).
func (c Config) QKVBias() bool { return c.ModelType == "qwen2" }

// QKNorm reports whether each query and key head is RMSNorm'd before RoPE
// (Qwen3's self_attn.q_norm and k_norm).
func (c Config) QKNorm() bool {
	return c.ModelType == "qwen3" || c.ModelType == "qwen3_moe" || c.IsQwen35()
}

// architectures maps a model_type to the HF class that config.json names.
var architectures = map[string]string{"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM", "llama": "LlamaForCausalLM",
	"qwen3_moe": "Qwen3MoeForCausalLM", qwen35: "Qwen3_5ForCausalLM", qwen35MoE: "Qwen3_5MoeForCausalLM",
	NemotronH: "NemotronHForCausalLM"}

// ReadConfig reads and validates dir/config.json; dir may be a Hugging
// Face model id in the local cache (hubcache).
func ReadConfig(dir string) (Config, error) {
	dir, err := hubcache.Resolve(dir)
	if err != nil {
		return Config{}, err
	}
	path := filepath.Join(dir, "config.json")
	b, err := regular.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("model config: %w", err)
	}
	return ParseConfig(b, path)
}

// ParseConfig parses config.json bytes, as transformers 4 or 5 wrote them;
// name is used in messages. Defaults are those of transformers' config
// class for the model_type; a key that changes the math and is not
// implemented is refused by name.
func ParseConfig(b []byte, name string) (Config, error) {
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	if isGemma4(raw) {
		return parseGemma4(raw, name)
	}
	_, wrapped := wrappedQwen35[fmt.Sprint(raw["model_type"])]
	if wrapped {
		text, err := unwrapQwen35(raw)
		if err != nil {
			return Config{}, fmt.Errorf("%s: %w", name, err)
		}
		raw = text
	}
	norm := map[string]any{}
	for k, v := range raw {
		norm[k] = v
	}
	// bos/eos_token_id may be lists (Llama 3.1's eos); keep the first.
	for _, k := range []string{"bos_token_id", "eos_token_id"} {
		if l, ok := raw[k].([]any); ok {
			norm[k] = nil
			if len(l) > 0 {
				norm[k] = l[0]
			}
		}
	}
	nb, _ := json.Marshal(norm)
	c := Config{RMSEps: 1e-6}
	if err := json.Unmarshal(nb, &c); err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	c.Raw = raw
	c.Wrapped = wrapped
	if err := refuseUnsupported(raw); err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	var err error
	if c.RopeTheta, c.Rope, err = parseRoPE(raw, c.MaxPositions); err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	c.TorchDType, _ = raw["torch_dtype"].(string)
	if d, ok := raw["dtype"].(string); ok {
		c.TorchDType = d // transformers 5's name
	}
	if v, ok := raw["num_key_value_heads"]; !ok || v == nil {
		c.KVHeads = c.Heads // LlamaConfig's default, and every class's for an explicit null
		switch {
		case ok:
		case c.ModelType == "qwen3_moe", c.ModelType == qwen35:
			c.KVHeads = 4 // Qwen3MoeConfig's and Qwen3_5TextConfig's default
		case c.ModelType == qwen35MoE:
			c.KVHeads = 2 // Qwen3_5MoeTextConfig's
		case c.ModelType != "llama":
			c.KVHeads = 32 // Qwen2Config's and Qwen3Config's default
		}
	}
	switch c.ModelType {
	case "qwen3_moe":
		c.MoE, err = parseMoE(raw)
	case qwen35MoE:
		c.MoE, err = parseMoE35(raw)
	}
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	if v, ok := raw["head_dim"]; (!ok || v == nil) && c.ModelType == "qwen3" {
		c.HeadDim = 128 // Qwen3Config's default, which need not be hidden/heads
	}
	if v, ok := raw["head_dim"]; (!ok || v == nil) && c.IsQwen35() {
		c.HeadDim = 256 // Qwen3_5TextConfig's and Qwen3_5MoeTextConfig's
	}
	if c.IsQwen35() {
		if err := parseQwen35(raw, &c); err != nil {
			return Config{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	if c.IsNemotron() {
		if err := parseNemotron(raw, &c); err != nil {
			return Config{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	if c.HeadDim == 0 && c.Heads > 0 {
		c.HeadDim = c.Hidden / c.Heads
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	if c.IsQwen35() || c.IsNemotron() {
		return c, nil // their layer types are parseQwen35's, parseNemotron's
	}
	if c.Window, c.WindowLayers, err = checkLayerTypes(raw, c); err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// refuseUnsupported refuses the keys of a raw config that would change
// the math in a way this package does not implement.
func refuseUnsupported(raw map[string]any) error {
	if act, ok := raw["hidden_act"]; ok && act != "silu" {
		return fmt.Errorf("hidden_act %v is not supported (silu only)", act)
	}
	if b, err := rawBool(raw, "mlp_bias"); err != nil {
		return err
	} else if b {
		return fmt.Errorf("mlp_bias true is not supported (MLP projections without biases only)")
	}
	if d, err := rawNumber(raw, "attention_dropout", 0, true); err != nil {
		return err
	} else if d != 0 {
		return fmt.Errorf("attention_dropout %g is not supported (0 only: the training forward has no attention dropout)", d)
	}
	if v, ok := raw["architectures"]; ok && v != nil {
		if _, ok := v.([]any); !ok {
			return fmt.Errorf("architectures must be a list of class names, got %v", v)
		}
	}
	if q, ok := raw["quantization_config"]; ok && q != nil {
		return fmt.Errorf("quantization_config is not supported (a quantized checkpoint; load its unquantized weights)")
	}
	mt, _ := raw["model_type"].(string)
	if archs, ok := raw["architectures"].([]any); ok && architectures[mt] != "" {
		for _, a := range archs {
			if a != architectures[mt] {
				return fmt.Errorf("architectures %v: %v is not supported (model_type %s is loaded as %s)", archs, a, mt, architectures[mt])
			}
		}
	}
	return nil
}

// checkLayerTypes reads which layers use sliding-window attention, and
// its window. The layer types are layer_types when config.json lists them,
// else, for Qwen2 and Qwen3, those their config classes derive: sliding
// window attention from layer max_window_layers on when
// use_sliding_window is true and sliding_window is set. A sliding layer
// needs that window (the classes set sliding_window to None without
// use_sliding_window); Llama has no sliding layers, and Qwen3 MoE's
// window (every layer's) stays refused.
func checkLayerTypes(raw map[string]any, c Config) (int, []bool, error) {
	// The sliding-window keys of Qwen2Config and Qwen3Config (LlamaConfig
	// has none), typed as transformers 5 types them.
	on, first, window := false, 28.0, 0.0 // max_window_layers' default
	if c.ModelType != "llama" {
		var err error
		if on, err = rawBool(raw, "use_sliding_window"); err != nil {
			return 0, nil, err
		}
		if window, err = rawNumber(raw, "sliding_window", 0, true); err != nil {
			return 0, nil, err
		}
		if c.ModelType == "qwen3_moe" {
			first = 0 // Qwen3MoeConfig has no max_window_layers: a window applies to every layer
		} else if first, err = rawNumber(raw, "max_window_layers", first, false); err != nil {
			return 0, nil, err
		}
		if first != math.Trunc(first) {
			return 0, nil, fmt.Errorf("max_window_layers must be a whole number, got %v", first)
		}
	}
	if w, ok := raw["sliding_window"]; !ok || w == nil {
		on = false // no window: every layer is full attention
	}
	var sliding []bool // allocated only where a layer slides: num_hidden_layers may be hostile
	if v, ok := raw["layer_types"]; ok && v != nil {
		l, ok := v.([]any)
		if !ok || len(l) != c.Layers {
			return 0, nil, fmt.Errorf("layer_types must list one type for each of the %d layers, got %v", c.Layers, v)
		}
		sliding = make([]bool, c.Layers)
		for i, t := range l {
			switch {
			case t == FullAttention:
			case t == SlidingAttention && (c.ModelType == "qwen2" || c.ModelType == "qwen3") && on:
				sliding[i] = true
			case t == SlidingAttention && (c.ModelType == "qwen2" || c.ModelType == "qwen3"):
				return 0, nil, fmt.Errorf("layer_types[%d] %v needs use_sliding_window true and a sliding_window", i, t)
			default:
				return 0, nil, fmt.Errorf("layer_types[%d] %v is not supported (full_attention only)", i, t)
			}
		}
	} else if on && int(max(first, 0)) < c.Layers {
		if c.ModelType == "qwen3_moe" {
			return 0, nil, fmt.Errorf("use_sliding_window true with sliding_window %v: every layer would use sliding window attention, "+
				"which is not supported for qwen3_moe", raw["sliding_window"])
		}
		if c.Layers > maxMoELayers {
			return 0, nil, fmt.Errorf("sliding-window attention with more than %d layers is not supported", maxMoELayers)
		}
		sliding = make([]bool, c.Layers)
		for i := int(max(first, 0)); i < c.Layers; i++ {
			sliding[i] = true
		}
	}
	if !slices.Contains(sliding, true) {
		return 0, nil, nil
	}
	if window < 1 || window != math.Trunc(window) {
		return 0, nil, fmt.Errorf("sliding_window must be a positive whole number, got %v", raw["sliding_window"])
	}
	return int(window), sliding, nil
}

// Validate checks every field is in range, naming the first that is not.
func (c Config) Validate() error {
	if c.IsGemma4() {
		return c.validateGemma4()
	}
	if _, ok := architectures[c.ModelType]; !ok {
		return fmt.Errorf("model_type %q is not supported (qwen2, qwen3, qwen3_moe, llama, qwen3_5 / qwen3_5_text, "+
			"qwen3_5_moe / qwen3_5_moe_text, gemma4 / gemma4_text, nemotron_h)", c.ModelType)
	}
	if !c.IsNemotron() { // validateNemotron checks its experts
		if err := c.MoE.validate(c.ModelType, c.Layers); err != nil {
			return err
		}
	}
	if c.ModelType != "qwen2" && c.AttentionBias {
		return fmt.Errorf("attention_bias true is not supported for %s (it puts biases on q, k, v and o_proj)", c.ModelType)
	}
	pos := []struct {
		name string
		v    int
	}{{"vocab_size", c.Vocab}, {"hidden_size", c.Hidden}, {"num_hidden_layers", c.Layers}, {"num_attention_heads", c.Heads}, {"num_key_value_heads", c.KVHeads},
		{"head_dim", c.HeadDim}}
	for _, p := range pos {
		if p.v <= 0 {
			return fmt.Errorf("%s must be positive, got %d", p.name, p.v)
		}
	}
	if c.Intermediate <= 0 && c.ModelType != qwen35MoE { // Qwen3_5MoeTextConfig has none: every layer is sparse
		return fmt.Errorf("intermediate_size must be positive, got %d", c.Intermediate)
	}
	if c.Heads%c.KVHeads != 0 {
		return fmt.Errorf("num_attention_heads (%d) must be a multiple of num_key_value_heads (%d)", c.Heads, c.KVHeads)
	}
	if c.HeadDim > maxHeadDim {
		return fmt.Errorf("head_dim %d is not supported (at most %d)", c.HeadDim, maxHeadDim)
	}
	if c.HeadDim%2 != 0 {
		return fmt.Errorf("head_dim must be even for RoPE, got %d", c.HeadDim)
	}
	if !(c.RMSEps > 0 && c.RMSEps < 1) {
		return fmt.Errorf("rms_norm_eps must be in (0, 1), got %g", c.RMSEps)
	}
	if !(c.RopeTheta > 0) {
		return fmt.Errorf("rope_theta must be positive, got %g", c.RopeTheta)
	}
	if err := c.Rope.validate(); err != nil {
		return err
	}
	if c.MaxPositions < 0 {
		return fmt.Errorf("max_position_embeddings must not be negative, got %d", c.MaxPositions)
	}
	if c.IsQwen35() {
		return c.validateQwen35()
	}
	if c.IsNemotron() {
		return c.validateNemotron()
	}
	if c.LayerTypes != nil || c.PartialRotary != 0 {
		return fmt.Errorf("layer types and partial RoPE are Qwen3.5's (%s, %s), not %s's", qwen35, qwen35MoE, c.ModelType)
	}
	return nil
}

// JSON renders the config as config.json: the raw keys read, with the shape
// fields set from the struct, and the RoPE written back in the form it was
// read in (rope_parameters for transformers 5, else rope_theta and
// rope_scaling).
func (c Config) JSON() ([]byte, error) {
	if c.IsGemma4() {
		return c.jsonGemma4()
	}
	out := map[string]any{}
	for k, v := range c.Raw {
		out[k] = v
	}
	if _, ok := out["architectures"]; !ok {
		out["architectures"] = []string{architectures[c.ModelType]}
	}
	set := map[string]any{
		"model_type": c.ModelType, "vocab_size": c.Vocab, "hidden_size": c.Hidden,
		"intermediate_size": c.Intermediate, "num_hidden_layers": c.Layers,
		"num_attention_heads": c.Heads, "num_key_value_heads": c.KVHeads, "head_dim": c.HeadDim,
		"rms_norm_eps": c.RMSEps, "tie_word_embeddings": c.TieEmbeddings,
		"max_position_embeddings": c.MaxPositions, "bos_token_id": c.BOS, "eos_token_id": c.EOS,
		"hidden_act": "silu",
	}
	for _, k := range []string{"bos_token_id", "eos_token_id"} {
		if l, ok := out[k].([]any); ok && len(l) > 0 && l[0] == float64(set[k].(int)) {
			delete(set, k) // a list whose first id is unchanged stays as it was
		}
	}
	rope := c.Rope.params()
	if p, ok := out["rope_parameters"]; ok && p != nil {
		rope["rope_theta"] = c.RopeTheta
		set["rope_parameters"] = rope
		if _, top := out["rope_theta"]; top {
			set["rope_theta"] = c.RopeTheta
		}
	} else {
		set["rope_theta"] = c.RopeTheta
		if len(rope) > 1 {
			set["rope_scaling"] = rope
		} else if _, ok := out["rope_scaling"]; ok {
			set["rope_scaling"] = nil
		}
	}
	if c.ModelType != "qwen2" {
		set["attention_bias"] = c.AttentionBias
	}
	switch c.ModelType {
	case "qwen3_moe":
		c.MoE.setJSON(set, out)
	case qwen35MoE:
		c.MoE.setJSON35(set)
		if _, ok := out["intermediate_size"]; !ok {
			delete(set, "intermediate_size") // Qwen3_5MoeTextConfig has none: every layer is sparse
		}
	}
	if c.TorchDType != "" {
		key := "torch_dtype"
		if _, ok := out["dtype"]; ok {
			key = "dtype"
		}
		set[key] = c.TorchDType
	}
	if c.IsQwen35() {
		c.jsonQwen35(out, set)
	}
	if c.IsNemotron() {
		c.jsonNemotron(out, set)
	}
	for k, v := range set {
		out[k] = v
	}
	return json.MarshalIndent(out, "", "  ")
}

// rawBool reads key of a raw config as a JSON boolean, false when the key
// is absent. Any other value, null included, is refused by name, as
// transformers 5's typed config classes refuse it (transformers 4 read 1
// as true; reading it as false here would load into other math).
func rawBool(raw map[string]any, key string) (bool, error) {
	v, ok := raw[key]
	if !ok {
		return false, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%s must be true or false, got %s", key, jsonText(v))
	}
	return b, nil
}

// rawNumber reads key of a raw config as a JSON number: def when the key
// is absent, or null where null is allowed. Any other value is refused by
// name.
func rawNumber(raw map[string]any, key string, def float64, nullable bool) (float64, error) {
	v, ok := raw[key]
	if !ok || (v == nil && nullable) {
		return def, nil
	}
	f, ok := v.(float64)
	if !ok {
		return 0, fmt.Errorf("%s must be a number, got %s", key, jsonText(v))
	}
	return f, nil
}

// jsonText renders a value read from JSON as JSON, so that a message
// tells the string "0" from the number 0 and null from absent.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
