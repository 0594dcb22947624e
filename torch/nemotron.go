package torch

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Nemotron-H (transformers' nemotron_h: NVIDIA Nemotron 3 Nano and its
// kin): a stack of single blocks, each x + mixer(norm(x)), the mixer a
// Mamba-2 layer (linear_attention), attention without RoPE
// (full_attention), a relu² MLP (mlp) or a mixture of experts (moe),
// layers_block_type listing them (the legacy hybrid_override_pattern
// spells them M, *, - and E). transformers names the weights model.*;
// the checkpoints hold them under backbone.* (its conversion mapping
// renames them as it loads), beside multi-token-prediction weights
// (mtp.*) that it skips. cgo/mamba2.h is the math.

// NemotronH is the Nemotron-H family's model_type.
const NemotronH = "nemotron_h"

// The block types of Nemotron.Blocks.
const (
	MambaBlock     = "linear_attention"
	AttentionBlock = "full_attention"
	MLPBlock       = "mlp"
	MoEBlock       = "moe"
)

// nemotronPattern maps the legacy hybrid_override_pattern's letters to
// block types, as NemotronHConfig._pattern_to_list.
var nemotronPattern = map[rune]string{'M': MambaBlock, '*': AttentionBlock, '-': MLPBlock, 'E': MoEBlock}

// Nemotron is a Nemotron-H model's own settings (NemotronHConfig's keys):
// the blocks and the Mamba-2 layers' sizes.
type Nemotron struct {
	Blocks     []string // layers_block_type: each layer's block
	Heads      int      // mamba_num_heads
	HeadDim    int      // mamba_head_dim
	Groups     int      // n_groups: groups of B and C
	State      int      // ssm_state_size
	ConvKernel int      // conv_kernel
	Chunk      int      // chunk_size: the chunked scan's chunk
	ConvBias   bool     // use_conv_bias
	DtMin      float64  // time_step_limit[0]
	DtMax      float64  // time_step_limit[1] (+Inf: none)
}

// Pattern spells the blocks as hybrid_override_pattern does (M, *, -, E).
func (n Nemotron) Pattern() string {
	var b strings.Builder
	for _, t := range n.Blocks {
		for r, name := range nemotronPattern {
			if name == t {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

// IsNemotron reports whether the model is a Nemotron-H model.
func (c Config) IsNemotron() bool { return c.ModelType == NemotronH }

// nemotronCheckpointPrefix is where a Nemotron-H checkpoint keeps the
// model's model.* weights.
const nemotronCheckpointPrefix = "backbone."

// nemotronDefaults are NemotronHConfig's defaults for the shape keys the
// families share, where config.json lacks them.
var nemotronDefaults = map[string]float64{"vocab_size": 131072, "hidden_size": 4096, "intermediate_size": 21504,
	"num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 4096}

// parseNemotron reads the Nemotron-H keys of raw into c, with
// NemotronHConfig's defaults and its legacy key names (mamba_n_groups,
// mamba_d_conv, mamba_chunk_size, mamba_conv_bias, mamba_dt_limit,
// hybrid_override_pattern). Refused by name: an MLP activation other than
// relu2, a Mamba activation other than silu, biases on the Mamba
// projections (use_bias) and a sliding window. The moe blocks' keys are
// parseNemotronMoE's.
func parseNemotron(raw map[string]any, c *Config) error {
	for k, def := range nemotronDefaults {
		if v, ok := raw[k]; ok && v != nil {
			continue
		}
		n := int(def)
		switch k {
		case "vocab_size":
			c.Vocab = n
		case "hidden_size":
			c.Hidden = n
		case "intermediate_size":
			c.Intermediate = n
		case "num_attention_heads":
			c.Heads = n
		case "num_key_value_heads":
			c.KVHeads = n
		case "head_dim":
			c.HeadDim = n
		case "max_position_embeddings":
			c.MaxPositions = n
		}
	}
	if _, ok := raw["num_key_value_heads"]; ok && raw["num_key_value_heads"] == nil {
		c.KVHeads = c.Heads
	}
	eps, err := rawNumber(raw, "layer_norm_epsilon", 1e-5, false)
	if err != nil {
		return err
	}
	c.RMSEps = eps
	for _, s := range []struct{ key, want string }{{"mlp_hidden_act", "relu2"}, {"mamba_hidden_act", "silu"}} {
		if v, ok := raw[s.key]; ok && v != s.want {
			return fmt.Errorf("%s %s is not supported (%s only)", s.key, jsonText(v), s.want)
		}
	}
	for _, k := range []string{"use_bias", "mamba_proj_bias"} {
		if b, err := rawBool(raw, k); err != nil {
			return err
		} else if b && k == "use_bias" {
			return fmt.Errorf("use_bias true is not supported (the Mamba-2 projections without biases only)")
		}
	}
	if w, ok := raw["sliding_window"]; ok && w != nil {
		return fmt.Errorf("sliding_window %s is not supported for %s (full attention only)", jsonText(w), NemotronH)
	}
	n := &c.Nemotron
	for _, f := range []struct {
		keys []string
		v    *int
		def  int
	}{{[]string{"mamba_num_heads"}, &n.Heads, 128}, {[]string{"mamba_head_dim"}, &n.HeadDim, 64},
		{[]string{"n_groups", "mamba_n_groups"}, &n.Groups, 8}, {[]string{"ssm_state_size"}, &n.State, 128},
		{[]string{"conv_kernel", "mamba_d_conv"}, &n.ConvKernel, 4}, {[]string{"chunk_size", "mamba_chunk_size"}, &n.Chunk, 128}} {
		*f.v = f.def
		for _, k := range f.keys {
			if _, ok := raw[k]; !ok {
				continue
			}
			x, err := rawNumber(raw, k, float64(f.def), false)
			if err != nil {
				return err
			}
			if x != math.Trunc(x) || x <= 0 {
				return fmt.Errorf("%s must be a positive whole number, got %v", k, x)
			}
			*f.v = int(x)
		}
	}
	if n.Heads%n.Groups != 0 {
		return fmt.Errorf("mamba_num_heads (%d) must be a multiple of n_groups (%d)", n.Heads, n.Groups)
	}
	n.ConvBias = true
	for _, k := range []string{"use_conv_bias", "mamba_conv_bias"} {
		if _, ok := raw[k]; ok {
			if n.ConvBias, err = rawBool(raw, k); err != nil {
				return err
			}
		}
	}
	n.DtMin, n.DtMax = 0, math.Inf(1)
	for _, k := range []string{"time_step_limit", "mamba_dt_limit"} {
		if v, ok := raw[k]; ok {
			if n.DtMin, n.DtMax, err = timeStepLimit(k, v); err != nil {
				return err
			}
		}
	}
	blocks, err := nemotronBlocks(raw)
	if err != nil {
		return err
	}
	n.Blocks = blocks
	c.Layers = len(blocks)
	c.MoE, err = parseNemotronMoE(raw, blocks)
	return err
}

// nemotronBlocks reads the block list: layers_block_type (or its alias
// layer_types), else the legacy hybrid_override_pattern, else
// NemotronHConfig's default.
func nemotronBlocks(raw map[string]any) ([]string, error) {
	var out []string
	for _, k := range []string{"layers_block_type", "layer_types"} {
		v, ok := raw[k]
		if !ok || v == nil {
			continue
		}
		l, ok := v.([]any)
		if !ok || len(l) == 0 {
			return nil, fmt.Errorf("%s must be a nonempty list of block types, got %s", k, jsonText(v))
		}
		for i, t := range l {
			s, _ := t.(string)
			switch s {
			case MambaBlock, AttentionBlock, MLPBlock, MoEBlock:
			default:
				return nil, fmt.Errorf("%s[%d] %s is not supported (linear_attention, full_attention, mlp, moe)", k, i, jsonText(t))
			}
			out = append(out, s)
		}
		return out, nil
	}
	if v, ok := raw["hybrid_override_pattern"]; ok && v != nil {
		p, ok := v.(string)
		if !ok || p == "" {
			return nil, fmt.Errorf("hybrid_override_pattern must be a nonempty string, got %s", jsonText(v))
		}
		for i, r := range p {
			t, ok := nemotronPattern[r]
			if !ok {
				return nil, fmt.Errorf("hybrid_override_pattern %q: character %d %q is not a block (M, *, -, E)", p, i, r)
			}
			out = append(out, t)
		}
		return out, nil
	}
	return []string{MambaBlock, MoEBlock, AttentionBlock, MLPBlock}, nil // NemotronHConfig's default
}

// timeStepLimit reads time_step_limit [min, max], whose max transformers
// 5 writes as {"__float__": "Infinity"} when infinite.
func timeStepLimit(key string, v any) (lo, hi float64, err error) {
	l, ok := v.([]any)
	if !ok || len(l) != 2 {
		return 0, 0, fmt.Errorf("%s must be [min, max], got %s", key, jsonText(v))
	}
	var out [2]float64
	for i, x := range l {
		switch x := x.(type) {
		case float64:
			out[i] = x
		case map[string]any:
			s, _ := x["__float__"].(string)
			switch strings.ToLower(s) {
			case "infinity", "inf":
				out[i] = math.Inf(1)
			default:
				return 0, 0, fmt.Errorf("%s[%d] %s is not a number", key, i, jsonText(x))
			}
		default:
			return 0, 0, fmt.Errorf("%s[%d] %s is not a number", key, i, jsonText(x))
		}
	}
	if !(out[0] >= 0 && out[0] <= out[1]) {
		return 0, 0, fmt.Errorf("%s %s must be [min, max] with 0 <= min <= max", key, jsonText(v))
	}
	return out[0], out[1], nil
}

// validateNemotron checks the Nemotron-H fields of c.
func (c Config) validateNemotron() error {
	n := c.Nemotron
	if len(n.Blocks) != c.Layers {
		return fmt.Errorf("%d blocks for %d layers", len(n.Blocks), c.Layers)
	}
	if c.Layers > maxMoELayers {
		return fmt.Errorf("%d layers are not supported for %s (at most %d)", c.Layers, c.ModelType, maxMoELayers)
	}
	if n.Heads <= 0 || n.HeadDim <= 0 || n.Groups <= 0 || n.State <= 0 || n.ConvKernel <= 0 || n.Chunk <= 0 || n.Heads%n.Groups != 0 {
		return fmt.Errorf("the Mamba-2 sizes must be positive, mamba_num_heads a multiple of n_groups")
	}
	if !slices.Contains(n.Blocks, MoEBlock) {
		if c.MoE.Experts != 0 {
			return fmt.Errorf("%d experts are set but no block is moe", c.MoE.Experts)
		}
		return nil
	}
	return c.MoE.validateNemotron()
}

// nemotronSkipped says whether a checkpoint tensor is one a Nemotron-H
// model skips by name: the multi-token-prediction weights.
func nemotronSkipped(name string) bool { return strings.HasPrefix(name, "mtp.") }

// jsonNemotron sets the Nemotron-H keys of config.json in out, as
// NemotronHConfig writes them, and drops the keys of the other families
// that JSON set.
func (c Config) jsonNemotron(out, set map[string]any) {
	for _, k := range []string{"num_hidden_layers", "rms_norm_eps", "hidden_act", "rope_theta", "rope_scaling", "rope_parameters"} {
		delete(set, k)
		delete(out, k)
	}
	n := c.Nemotron
	set["layers_block_type"] = n.Blocks
	if c.MoE.Experts > 0 {
		c.MoE.setJSONNemotron(set, out)
	}
	delete(out, "hybrid_override_pattern")
	set["layer_norm_epsilon"] = c.RMSEps
	set["mamba_num_heads"], set["mamba_head_dim"], set["n_groups"] = n.Heads, n.HeadDim, n.Groups
	set["ssm_state_size"], set["conv_kernel"], set["chunk_size"], set["use_conv_bias"] = n.State, n.ConvKernel, n.Chunk, n.ConvBias
	for _, k := range []string{"mamba_n_groups", "mamba_d_conv", "mamba_chunk_size", "mamba_conv_bias"} {
		delete(out, k)
	}
	_, had := out["time_step_limit"]
	_, legacy := out["mamba_dt_limit"]
	delete(out, "mamba_dt_limit")
	delete(out, "time_step_limit")
	if !had && !legacy && n.DtMin == 0 && math.IsInf(n.DtMax, 1) {
		return // NemotronHConfig's default
	}
	// Written as floats (0.0, not 0, which encoding/json writes for the
	// number read): the class takes floats only.
	float := func(v float64) any {
		if math.IsInf(v, 1) {
			return map[string]any{"__float__": "Infinity"}
		}
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return json.Number(s)
	}
	set["time_step_limit"] = []any{float(n.DtMin), float(n.DtMax)}
}
