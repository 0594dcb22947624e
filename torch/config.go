package torch

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/agentrl/agentrl/internal/regular"
)

// Config is the part of a Hugging Face config.json that shapes a Qwen2,
// Qwen3 or Llama decoder. Raw keeps every key of the file so Save writes back what it
// read, with the shape fields updated.
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
	RopeTheta     float64 `json:"rope_theta"`
	TieEmbeddings bool    `json:"tie_word_embeddings"`
	MaxPositions  int     `json:"max_position_embeddings"`
	AttentionBias bool    `json:"attention_bias"` // Llama's q/k/v biases; Qwen2 always has them, Qwen3 never here
	TorchDType    string  `json:"torch_dtype"`
	BOS           int     `json:"bos_token_id"`
	EOS           int     `json:"eos_token_id"`

	Raw map[string]any `json:"-"`
}

// QKVBias reports whether the attention projections q, k, v carry biases.
func (c Config) QKVBias() bool { return c.ModelType == "qwen2" || c.AttentionBias }

// QKNorm reports whether each query and key head is RMSNorm'd before RoPE
// (Qwen3's self_attn.q_norm and k_norm).
func (c Config) QKNorm() bool { return c.ModelType == "qwen3" }

// architectures maps a model_type to the HF class that config.json names.
var architectures = map[string]string{"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM", "llama": "LlamaForCausalLM"}

// ReadConfig reads and validates dir/config.json.
func ReadConfig(dir string) (Config, error) {
	path := filepath.Join(dir, "config.json")
	b, err := regular.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("model config: %w", err)
	}
	return ParseConfig(b, path)
}

// ParseConfig parses config.json bytes; name is used in messages.
func ParseConfig(b []byte, name string) (Config, error) {
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	// eos_token_id may be a list (Qwen2.5 generation configs); keep the first.
	if l, ok := raw["eos_token_id"].([]any); ok && len(l) > 0 {
		raw["eos_token_id"] = l[0]
	}
	if v, ok := raw["rope_scaling"]; ok && v != nil {
		return Config{}, fmt.Errorf("%s: rope_scaling %v is not supported (only plain RoPE)", name, v)
	}
	norm, _ := json.Marshal(raw)
	c := Config{RopeTheta: 10000, RMSEps: 1e-6}
	if err := json.Unmarshal(norm, &c); err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	c.Raw = raw
	if c.KVHeads == 0 {
		c.KVHeads = c.Heads
	}
	if _, ok := raw["head_dim"]; !ok && c.ModelType == "qwen3" {
		c.HeadDim = 128 // Qwen3Config's default, which need not be hidden/heads
	}
	if c.HeadDim == 0 && c.Heads > 0 {
		c.HeadDim = c.Hidden / c.Heads
	}
	if err := c.Validate(); err != nil {
		return Config{}, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// Validate checks every field is in range, naming the first that is not.
func (c Config) Validate() error {
	if _, ok := architectures[c.ModelType]; !ok {
		return fmt.Errorf("model_type %q is not supported (qwen2, qwen3, llama)", c.ModelType)
	}
	if c.ModelType == "qwen3" && c.AttentionBias {
		return fmt.Errorf("attention_bias true is not supported for qwen3 (it puts biases on q, k, v and o_proj)")
	}
	pos := []struct {
		name string
		v    int
	}{{"vocab_size", c.Vocab}, {"hidden_size", c.Hidden}, {"intermediate_size", c.Intermediate},
		{"num_hidden_layers", c.Layers}, {"num_attention_heads", c.Heads}, {"num_key_value_heads", c.KVHeads},
		{"head_dim", c.HeadDim}}
	for _, p := range pos {
		if p.v <= 0 {
			return fmt.Errorf("%s must be positive, got %d", p.name, p.v)
		}
	}
	if c.Heads%c.KVHeads != 0 {
		return fmt.Errorf("num_attention_heads (%d) must be a multiple of num_key_value_heads (%d)", c.Heads, c.KVHeads)
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
	if c.MaxPositions < 0 {
		return fmt.Errorf("max_position_embeddings must not be negative, got %d", c.MaxPositions)
	}
	return nil
}

// JSON renders the config as config.json: the raw keys read, with the shape
// fields set from the struct.
func (c Config) JSON() ([]byte, error) {
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
		"rms_norm_eps": c.RMSEps, "rope_theta": c.RopeTheta, "tie_word_embeddings": c.TieEmbeddings,
		"max_position_embeddings": c.MaxPositions, "bos_token_id": c.BOS, "eos_token_id": c.EOS,
		"hidden_act": "silu",
	}
	if c.ModelType != "qwen2" {
		set["attention_bias"] = c.AttentionBias
	}
	if c.TorchDType != "" {
		set["torch_dtype"] = c.TorchDType
	}
	for k, v := range set {
		out[k] = v
	}
	return json.MarshalIndent(out, "", "  ")
}
