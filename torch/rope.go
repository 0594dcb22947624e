package torch

// #include "agentrl.h"
import "C"

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// RoPE is a config's rotary position embedding beyond its base rope_theta
// (Config.RopeTheta): transformers' rope_type and the parameters of that
// type, read from rope_parameters (transformers 5) or rope_scaling
// (transformers 4). The zero value is plain RoPE ("default").
type RoPE struct {
	// Type is the rope_type: "default" (or ""), "linear", "llama3" or
	// "yarn". Any other is refused when the config is read.
	Type string
	// Factor is the context extension factor (linear, llama3, yarn).
	Factor float64
	// LowFreqFactor and HighFreqFactor bound llama3's smoothed band.
	LowFreqFactor, HighFreqFactor float64
	// OriginalMaxPositions is original_max_position_embeddings, the
	// pretraining context (llama3, yarn).
	OriginalMaxPositions int
	// AttentionFactor multiplies cos and sin (yarn); 0 (left out or null:
	// a given 0 is refused) derives it from Factor, MScale and
	// MScaleAllDim as transformers does.
	AttentionFactor float64
	// BetaFast and BetaSlow bound yarn's ramp in rotations (0: 32 and 1).
	BetaFast, BetaSlow float64
	// MScale and MScaleAllDim are yarn's DeepSeek-style attention factor
	// terms (used only when both are set).
	MScale, MScaleAllDim float64
	// Untruncated is yarn's "truncate": false: the ramp's bounds are not
	// rounded to whole dimensions.
	Untruncated bool
}

// ropeKeys are the keys each implemented rope_type may carry (besides
// rope_type, its older name type, rope_theta and partial_rotary_factor),
// as transformers' RotaryEmbeddingConfigMixin validates them.
var ropeKeys = map[string][]string{
	"default": nil,
	"linear":  {"factor"},
	"llama3":  {"factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"},
	"yarn": {"factor", "original_max_position_embeddings", "attention_factor", "beta_fast", "beta_slow",
		"mscale", "mscale_all_dim", "truncate"},
}

// ropeRequired are the keys transformers requires of each rope_type
// (original_max_position_embeddings defaults to max_position_embeddings).
var ropeRequired = map[string][]string{
	"linear": {"factor"},
	"llama3": {"factor", "low_freq_factor", "high_freq_factor"},
	"yarn":   {"factor"},
}

// ropeRefused says why each rope_type transformers knows and this
// package does not implement is refused.
var ropeRefused = map[string]string{
	"dynamic": "its frequencies change with the longest sequence transformers has seen past max_position_embeddings, " +
		"state a KV-cache engine and a training forward cannot share",
	"longrope":     "not shipped by the supported families (Phi-3's scaling)",
	"proportional": "not shipped by the supported families",
}

// parseRoPE reads the rotary embedding of a raw config.json: rope_theta
// and the RoPE type with its parameters, from rope_parameters
// (transformers 5: {"rope_theta": ..., "rope_type": ...}) or rope_scaling
// (transformers 4, with rope_theta at the top level), by transformers'
// precedence: a value inside the dict, then the top-level key, then the
// default (theta 10000; original_max_position_embeddings the top-level
// key when there is one, else max_position_embeddings). Types and keys
// it does not implement are refused by name.
func parseRoPE(raw map[string]any, maxPositions int) (float64, RoPE, error) {
	var p map[string]any
	from := ""
	for _, key := range []string{"rope_parameters", "rope_scaling"} {
		v, ok := raw[key]
		if !ok || v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return 0, RoPE{}, fmt.Errorf("%s must be an object, got %v", key, v)
		}
		if p != nil {
			return 0, RoPE{}, fmt.Errorf("both rope_parameters (transformers 5) and rope_scaling (transformers 4) are set: keep one")
		}
		p, from = m, key
	}
	if p == nil {
		p, from = map[string]any{}, "rope_parameters"
	}
	for _, lt := range []string{"full_attention", "sliding_attention"} {
		if _, ok := p[lt]; ok {
			return 0, RoPE{}, fmt.Errorf("%s per layer type (%s) is not supported: one RoPE for every layer", from, lt)
		}
	}
	num := func(key string, def float64) (float64, error) {
		v, ok := p[key]
		if !ok || v == nil {
			return def, nil
		}
		f, ok := v.(float64)
		if !ok {
			return 0, fmt.Errorf("%s.%s must be a number, got %s", from, key, jsonText(v))
		}
		return f, nil
	}
	// A number that transformers reads without a fallback: null is refused
	// (transformers fails on it), absent gives def.
	required := func(key string, def float64) (float64, error) {
		if v, ok := p[key]; ok && v == nil {
			return 0, fmt.Errorf("%s.%s must be a number, got null", from, key)
		}
		return num(key, def)
	}
	// rope_theta: the dict's, else the top-level key, else the default; a
	// null one is refused (transformers raises on it).
	theta := 10000.0 // transformers' default_theta
	if v, ok := raw["rope_theta"]; ok {
		f, ok := v.(float64)
		if _, inDict := p["rope_theta"]; !ok && (v != nil || !inDict) {
			return 0, RoPE{}, fmt.Errorf("rope_theta must be a number, got %s", jsonText(v))
		}
		theta = f
	}
	theta, err := required("rope_theta", theta)
	if err != nil {
		return 0, RoPE{}, err
	}
	partial, err := num("partial_rotary_factor", 1)
	if err != nil {
		return 0, RoPE{}, err
	}
	top, err := rawNumber(raw, "partial_rotary_factor", 1, true)
	if err != nil {
		return 0, RoPE{}, err
	}
	if partial == 1 {
		partial = top
	}
	// Qwen3.5's partial RoPE and its multimodal RoPE keys (the same
	// rotation for text positions) are read by parseQwen35.
	qwen35Keys := raw["model_type"] == qwen35 || raw["model_type"] == qwen35MoE
	if partial != 1 && !qwen35Keys {
		return 0, RoPE{}, fmt.Errorf("partial_rotary_factor %g is not supported (RoPE on every dimension of a head only)", partial)
	}
	var r RoPE
	// rope_type, else transformers 4's older name type, else default. A
	// key present is taken as it is: transformers does not fall back past
	// a null rope_type (it finds no RoPE function for None).
	for _, key := range []string{"rope_type", "type"} {
		v, ok := p[key]
		if !ok {
			continue
		}
		s, ok := v.(string)
		if !ok || s == "" {
			return 0, RoPE{}, fmt.Errorf("%s.%s must name a RoPE type, got %s", from, key, jsonText(v))
		}
		r.Type = s
		break
	}
	if r.Type == "" {
		r.Type = "default"
	}
	allowed, ok := ropeKeys[r.Type]
	if !ok {
		if why, known := ropeRefused[r.Type]; known {
			return 0, RoPE{}, fmt.Errorf("%s rope_type %q is not supported: %s", from, r.Type, why)
		}
		return 0, RoPE{}, fmt.Errorf("%s rope_type %q is not supported (default, linear, llama3, yarn)", from, r.Type)
	}
	for k := range p {
		if qwen35Keys && (k == "mrope_section" || k == "mrope_interleaved") {
			continue
		}
		if !slices.Contains(allowed, k) && k != "rope_type" && k != "type" && k != "rope_theta" && k != "partial_rotary_factor" {
			return 0, RoPE{}, fmt.Errorf("%s key %q is not supported for rope_type %q (it takes %s)", from, k, r.Type,
				strings.Join(append([]string{"rope_theta"}, allowed...), ", "))
		}
	}
	if r.Type == "default" {
		return theta, RoPE{}, nil
	}
	for _, k := range ropeRequired[r.Type] {
		if _, ok := p[k]; !ok {
			return 0, RoPE{}, fmt.Errorf("%s of rope_type %q lacks %s", from, r.Type, k)
		}
	}
	if r.Factor, err = num("factor", 0); err != nil {
		return 0, RoPE{}, err
	}
	if f, ok := p["factor"].(float64); ok && f == 0 {
		// transformers divides the frequencies by it.
		return 0, RoPE{}, fmt.Errorf("%s.factor must be positive, got 0", from)
	}
	for _, f := range []struct {
		key string
		v   *float64
	}{{"low_freq_factor", &r.LowFreqFactor}, {"high_freq_factor", &r.HighFreqFactor}, {"attention_factor", &r.AttentionFactor},
		{"beta_fast", &r.BetaFast}, {"beta_slow", &r.BetaSlow}, {"mscale", &r.MScale}, {"mscale_all_dim", &r.MScaleAllDim}} {
		if *f.v, err = num(f.key, 0); err != nil {
			return 0, RoPE{}, err
		}
	}
	if f, ok := p["attention_factor"].(float64); ok && f == 0 {
		// transformers multiplies cos and sin by a given attention_factor,
		// and 0 zeroes every query and key.
		return 0, RoPE{}, fmt.Errorf("%s.attention_factor 0 is not supported: it multiplies cos and sin, "+
			"so every query and key would be zero (leave it out for 0.1 ln(factor) + 1)", from)
	}
	if r.Type == "llama3" || r.Type == "yarn" {
		orig, err := required("original_max_position_embeddings", float64(maxPositions))
		if err != nil {
			return 0, RoPE{}, err
		}
		if v, ok := raw["original_max_position_embeddings"]; ok {
			top, ok := v.(float64)
			if !ok {
				return 0, RoPE{}, fmt.Errorf("original_max_position_embeddings must be a number, got %s", jsonText(v))
			}
			orig = top // transformers gives the top-level key priority (Phi-3)
		}
		r.OriginalMaxPositions = int(orig)
		if float64(r.OriginalMaxPositions) != orig {
			return 0, RoPE{}, fmt.Errorf("%s.original_max_position_embeddings must be a whole number, got %g", from, orig)
		}
	}
	if v, ok := p["truncate"]; ok {
		// transformers truncates when truncate is true or left out; null
		// reads as false there.
		b, ok := v.(bool)
		if !ok && v != nil {
			return 0, RoPE{}, fmt.Errorf("%s.truncate must be true or false, got %s", from, jsonText(v))
		}
		r.Untruncated = !b
	}
	if r.Type == "yarn" && r.Factor == 0 && r.OriginalMaxPositions > 0 {
		// transformers: a yarn factor of null is the ratio of the contexts.
		r.Factor = float64(maxPositions) / float64(r.OriginalMaxPositions)
	}
	if r.Type == "yarn" && theta == 1 {
		// transformers' ramp divides by ln(rope_theta).
		return 0, RoPE{}, fmt.Errorf("rope_theta 1 is not supported with rope_type \"yarn\": its ramp divides by ln(rope_theta)")
	}
	return theta, r, nil
}

// params renders r as rope_parameters (without rope_theta): rope_type and
// the keys of its type that are set.
func (r RoPE) params() map[string]any {
	t := r.Type
	if t == "" {
		t = "default"
	}
	out := map[string]any{"rope_type": t}
	if t == "default" {
		return out
	}
	out["factor"] = r.Factor
	set := func(key string, v float64) {
		if v != 0 {
			out[key] = v
		}
	}
	set("low_freq_factor", r.LowFreqFactor)
	set("high_freq_factor", r.HighFreqFactor)
	set("attention_factor", r.AttentionFactor)
	set("beta_fast", r.BetaFast)
	set("beta_slow", r.BetaSlow)
	set("mscale", r.MScale)
	set("mscale_all_dim", r.MScaleAllDim)
	if r.OriginalMaxPositions != 0 {
		out["original_max_position_embeddings"] = r.OriginalMaxPositions
	}
	if r.Untruncated {
		out["truncate"] = false
	}
	return out
}

// validate checks r's parameters, naming the first that is out of range.
func (r RoPE) validate() error {
	switch r.Type {
	case "", "default":
		return nil
	case "linear", "llama3", "yarn":
	default:
		return fmt.Errorf("rope_type %q is not supported (default, linear, llama3, yarn)", r.Type)
	}
	if !(r.Factor > 0) {
		return fmt.Errorf("rope %s: factor must be positive, got %g", r.Type, r.Factor)
	}
	if r.Type == "linear" {
		return nil
	}
	if r.OriginalMaxPositions <= 0 {
		return fmt.Errorf("rope %s: original_max_position_embeddings must be positive, got %d", r.Type, r.OriginalMaxPositions)
	}
	if r.Type == "llama3" && !(r.LowFreqFactor > 0 && r.HighFreqFactor > r.LowFreqFactor) {
		return fmt.Errorf("rope llama3: want 0 < low_freq_factor < high_freq_factor, got %g and %g", r.LowFreqFactor, r.HighFreqFactor)
	}
	if r.AttentionFactor < 0 {
		return fmt.Errorf("rope yarn: attention_factor must not be negative, got %g", r.AttentionFactor)
	}
	return nil
}

// RopeFrequencies is the rotary embedding of c as transformers computes
// it (modeling_rope_utils.py's ROPE_INIT_FUNCTIONS): the head_dim/2
// inverse frequencies inv_freq, where the angle of dimension j (and j +
// head_dim/2) at position p is p * inv_freq[j], and the attention factor
// that multiplies cos and sin (attention_scaling, 1 but for yarn). The
// plain frequencies are transformers' float32 ones to the bit
// (ropeInvFreq); the scaled types' changes to them are made in float64
// here. With d = head_dim and base = rope_theta:
//
//	default  inv_freq[j] = base^(-2j/d)
//	linear   default / factor
//	llama3   wavelen = 2π / inv; wavelen < original/high_freq_factor: kept;
//	         wavelen > original/low_freq_factor: / factor; between, with
//	         s = (original/wavelen - low) / (high - low):
//	         (1 - s) inv/factor + s inv
//	yarn     extrapolation e = default, interpolation e / factor, mixed as
//	         i (1 - x) + e x with x = 1 - clamp((j - lo) / (hi - lo), 0, 1),
//	         lo and hi the dimensions where the original context turns
//	         beta_fast and beta_slow times, d ln(orig / (2π n)) / (2 ln base)
//	         (floored and ceiled unless truncate is false, clamped to
//	         [0, d-1]); attention factor 0.1 ln(factor) + 1, or
//	         mscale(factor, mscale) / mscale(factor, mscale_all_dim) when
//	         both are set, or attention_factor when given.
func (c Config) RopeFrequencies() (invFreq []float64, attentionFactor float64, err error) {
	r := c.Rope
	if err := r.validate(); err != nil {
		return nil, 0, err
	}
	d := c.RotaryDim()
	base := c.RopeTheta
	inv, err := ropeInvFreq(base, d, d/2)
	if err != nil {
		return nil, 0, err
	}
	switch r.Type {
	case "linear":
		for j := range inv {
			inv[j] /= r.Factor
		}
	case "llama3":
		orig := float64(r.OriginalMaxPositions)
		lowWavelen, highWavelen := orig/r.LowFreqFactor, orig/r.HighFreqFactor
		for j, f := range inv {
			wavelen := 2 * math.Pi / f
			switch {
			case wavelen < highWavelen:
			case wavelen > lowWavelen:
				inv[j] = f / r.Factor
			default:
				s := (orig/wavelen - r.LowFreqFactor) / (r.HighFreqFactor - r.LowFreqFactor)
				inv[j] = (1-s)*f/r.Factor + s*f
			}
		}
	case "yarn":
		inv, att := yarn(inv, d, base, r)
		return inv, att, nil
	}
	return inv, 1, nil
}

// ropeInvFreq is base^(-2j/d) for j < n as transformers computes it, in
// float32 on the CPU (1 / base ** (arange(0, 2n, 2) / d)), by libtorch's
// own ops: its float32 pow is off the exact value by up to an ulp, and
// its float64 reference forward takes these float32 tables, so that
// values rounded from float64 instead turn some angles an ulp apart (at
// Gemma-4-E2B's width, rows of 520 tokens, twice transformers' float32
// logit error).
func ropeInvFreq(base float64, d, n int) ([]float64, error) {
	out := make([]float64, n)
	if n == 0 {
		return out, nil
	}
	if err := Check(); err != nil {
		return nil, err
	}
	var msg *C.char
	err := check("rope_inv_freq", C.ar_rope_inv_freq(C.double(base), C.int64_t(d), C.int64_t(n), (*C.double)(&out[0]), &msg), msg)
	return out, err
}

// yarn mixes the plain frequencies ext (base^(-2j/d)) with the
// interpolated ext/factor across the ramp of YaRN (Peng et al. 2023,
// arXiv:2309.00071) as transformers' _compute_yarn_parameters does.
func yarn(ext []float64, d int, base float64, r RoPE) ([]float64, float64) {
	mscale := func(scale, m float64) float64 {
		if scale <= 1 {
			return 1
		}
		return 0.1*m*math.Log(scale) + 1
	}
	att := r.AttentionFactor
	if att == 0 {
		if r.MScale != 0 && r.MScaleAllDim != 0 {
			att = mscale(r.Factor, r.MScale) / mscale(r.Factor, r.MScaleAllDim)
		} else {
			att = mscale(r.Factor, 1)
		}
	}
	fast, slow := r.BetaFast, r.BetaSlow
	if fast == 0 {
		fast = 32
	}
	if slow == 0 {
		slow = 1
	}
	dim := func(rotations float64) float64 {
		return float64(d) * math.Log(float64(r.OriginalMaxPositions)/(rotations*2*math.Pi)) / (2 * math.Log(base))
	}
	lo, hi := dim(fast), dim(slow)
	if !r.Untruncated {
		lo, hi = math.Floor(lo), math.Ceil(hi)
	}
	lo, hi = math.Max(lo, 0), math.Min(hi, float64(d-1))
	if lo == hi {
		hi += 0.001 // transformers' guard against a zero-width ramp
	}
	inv := make([]float64, len(ext))
	for j, e := range ext {
		ramp := math.Min(math.Max((float64(j)-lo)/(hi-lo), 0), 1)
		x := 1 - ramp // the share of extrapolation
		inv[j] = e/r.Factor*(1-x) + e*x
	}
	return inv, att
}
