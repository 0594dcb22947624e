package torch

// #include <stdlib.h>
// #include "agentrl.h"
import "C"

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// LoRA is the shape of a model's adapters, as PEFT's LoraConfig: rank r, lora_alpha,
// lora_dropout, the projections adapted (Hugging Face module names) and use_rslora.
type LoRA struct {
	Rank    int
	Alpha   float64
	Dropout float64
	Targets []string // subset of LoRATargets, in any order
	// RSLoRA scales the adapters by alpha/sqrt(r) instead of alpha/r
	// (rank-stabilised LoRA, Kalajdzievski 2023; PEFT's use_rslora).
	RSLoRA bool
}

// LoRATargets are the module names an adapter can sit on, in a layer's table order:
// an attention layer's (self_attn), a Gated DeltaNet layer's (Qwen3.5's linear_attn),
// the MLP's, a Nemotron-H Mamba-2 layer's in_proj (its out_proj, attention
// and MLP projections are the names above, under mixer), a Gemma 4
// layer's per-layer input gate and projection (directly under the layer),
// then Gemma 4's ModelLoRATarget, the model's own. PEFT's "all-linear"
// means those of them a model has (Config.AllLinear; the LM head is never adapted).
var LoRATargets = []string{"q_proj", "k_proj", "v_proj", "o_proj",
	"in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj",
	"gate_proj", "up_proj", "down_proj", "in_proj",
	"per_layer_input_gate", "per_layer_projection", ModelLoRATarget}

// ModelLoRATarget is the target that is a module of the model, not of its
// layers: Gemma 4's model.per_layer_model_projection (the per-layer
// inputs' projection of the embeddings), one adapter for the model under
// base_model.model.model.per_layer_model_projection.lora_A/B.weight.
const ModelLoRATarget = "per_layer_model_projection"

// loraBlocks are the blocks of a decoder layer the LoRATargets sit in
// ("": directly under the layer, as Gemma 4's per-layer input gate and
// projection).
var loraBlocks = map[string]string{"q_proj": "self_attn", "k_proj": "self_attn", "v_proj": "self_attn", "o_proj": "self_attn",
	"in_proj_qkv": "linear_attn", "in_proj_z": "linear_attn", "in_proj_b": "linear_attn", "in_proj_a": "linear_attn",
	"out_proj": "linear_attn", "gate_proj": "mlp", "up_proj": "mlp", "down_proj": "mlp", "in_proj": "mixer",
	"per_layer_input_gate": "", "per_layer_projection": ""}

// nemotronLoRABlocks are the Nemotron-H blocks the LoRATargets sit in (all
// under mixer). A Mamba-2 layer's out_proj takes none: PEFT refuses it on
// Mamba-based models (LoRARefused).
var nemotronLoRABlocks = map[string]string{"q_proj": AttentionBlock, "k_proj": AttentionBlock, "v_proj": AttentionBlock,
	"o_proj": AttentionBlock, "in_proj": MambaBlock, "up_proj": MLPBlock, "down_proj": MLPBlock}

// LoRARefused says why a model of c takes no adapter on target, "" where
// nothing refuses it: a Nemotron-H Mamba-2 layer's out_proj, which PEFT
// refuses as incompatible with Mamba-based models.
func (c Config) LoRARefused(target string) string {
	if c.IsNemotron() && target == "out_proj" && slices.Contains(c.Nemotron.Blocks, MambaBlock) {
		return "out_proj: LoRA on a Nemotron-H Mamba-2 layer's mixer.out_proj is not supported (PEFT refuses it as " +
			"incompatible with Mamba-based models); target in_proj"
	}
	return ""
}

// LoRAModule is the path of target's module under model.layers.{i}: its
// block and name (self_attn.q_proj, linear_attn.in_proj_qkv, mlp.down_proj;
// per_layer_input_gate, directly under the layer), "" for a name not in
// LoRATargets or not a layer's (ModelLoRATarget).
func LoRAModule(target string) string {
	b, ok := loraBlocks[target]
	switch {
	case !ok:
		return ""
	case b == "":
		return target
	}
	return b + "." + target
}

// LoRAModule is the path of target's module under model.layers.{i} in a
// model of c: LoRAModule(target), or a Nemotron-H block's mixer.<target>
// ("" for a name that none of its blocks has).
func (c Config) LoRAModule(target string) string {
	if !c.IsNemotron() {
		return LoRAModule(target)
	}
	if _, ok := nemotronLoRABlocks[target]; !ok {
		return ""
	}
	return "mixer." + target
}

// LoRALayers are the layers of a model of c that have target's projection:
// the attention layers (self_attn; a Gemma 4's kv-shared layers have no
// k_proj or v_proj, its attention_k_eq_v full layers no v_proj), the
// Gated DeltaNet layers (linear_attn), the layers whose MLP is dense
// (mlp), every layer of a Gemma 4 with per-layer inputs (its per-layer
// input gate and projection); a Nemotron-H model's blocks of the kind
// that has it; none for a name not in LoRATargets or not a layer's
// (ModelLoRATarget: HasLoRATarget).
func (c Config) LoRALayers(target string) []int {
	var out []int
	if c.IsNemotron() {
		for i, b := range c.Nemotron.Blocks {
			if nemotronLoRABlocks[target] == b {
				out = append(out, i)
			}
		}
		return out
	}
	block, ok := loraBlocks[target]
	if !ok {
		return nil
	}
	for i := range c.Layers {
		linear := c.Hybrid() && c.LayerTypes[i] == LinearAttention
		switch block {
		case "":
			if c.perLayerInputs() {
				out = append(out, i)
			}
		case "self_attn":
			if !linear && !c.gemma4LacksProj(i, target) {
				out = append(out, i)
			}
		case "linear_attn":
			if linear {
				out = append(out, i)
			}
		case "mlp":
			if !c.SparseLayer(i) {
				out = append(out, i)
			}
		}
	}
	return out
}

// HasLoRATarget says whether a model of c has target's module: some
// layer has it (LoRALayers), or, for ModelLoRATarget, the model has
// per-layer inputs.
func (c Config) HasLoRATarget(target string) bool {
	if target == ModelLoRATarget {
		return c.perLayerInputs()
	}
	return len(c.LoRALayers(target)) > 0
}

// perLayerInputs says whether c is a Gemma 4 with per-layer inputs (and so
// per_layer_input_gate, per_layer_projection and per_layer_model_projection).
func (c Config) perLayerInputs() bool { return c.IsGemma4() && c.Gemma.PerLayerDim > 0 }

// AllLinear is PEFT's all-linear for a model of c: the LoRATargets it
// has, in order (a Gemma 4's per-layer input projections included, as
// PEFT adapts every nn.Linear but the LM head). (A mixture-of-experts
// model's MLP targets are kept, for NewLoRAModel to refuse by name: a
// Nemotron-H's up_proj and down_proj where it has moe blocks, whose shared
// experts PEFT would adapt.)
func (c Config) AllLinear() []string {
	var out []string
	for _, t := range LoRATargets {
		mlp := loraBlocks[t] == "mlp" && (!c.IsNemotron() || c.Sparse() && t != "gate_proj")
		if c.HasLoRATarget(t) || mlp {
			out = append(out, t)
		}
	}
	return out
}

// Validate reports a bad rank, alpha, dropout or target name, naming it.
func (c LoRA) Validate() error {
	if c.Rank <= 0 {
		return fmt.Errorf("lora rank must be positive, got %d", c.Rank)
	}
	if !(c.Alpha > 0) {
		return fmt.Errorf("lora alpha must be positive, got %v", c.Alpha)
	}
	if !(c.Dropout >= 0 && c.Dropout < 1) {
		return fmt.Errorf("lora dropout must be in [0, 1), got %v", c.Dropout)
	}
	if len(c.Targets) == 0 {
		return fmt.Errorf("lora targets: none given; want some of %s", strings.Join(LoRATargets, ", "))
	}
	for i, t := range c.Targets {
		if !slices.Contains(LoRATargets, t) {
			return fmt.Errorf("lora target %q: want one of %s", t, strings.Join(LoRATargets, ", "))
		}
		if slices.Contains(c.Targets[:i], t) {
			return fmt.Errorf("lora target %q is named twice", t)
		}
	}
	return nil
}

// Scale is what B A is multiplied by: alpha / rank, or alpha / sqrt(rank)
// with RSLoRA.
func (c LoRA) Scale() float64 {
	if c.RSLoRA {
		return c.Alpha / math.Sqrt(float64(c.Rank))
	}
	return c.Alpha / float64(c.Rank)
}

// targetBits are c's targets as the ABI's AR_LORA_* bits (bit i is
// LoRATargets[i]); c must be valid.
func (c LoRA) targetBits() C.int {
	var bits C.int
	for _, t := range c.Targets {
		bits |= 1 << slices.Index(LoRATargets, t)
	}
	return bits
}

// clone is a copy of c that shares no slice with it.
func (c LoRA) clone() *LoRA {
	c.Targets = slices.Clone(c.Targets)
	return &c
}

// NewLoRAModel returns a model over base's weights -- shared, not copied, and frozen:
// they get no gradient -- with adapters per c on every layer's targets, in float32
// whatever base's dtype (float64 over a float64 base, for precision tests),
// initialised as PEFT does (lora_A Kaiming-uniform with a=sqrt(5)
// from seed, lora_B zero, so the model equals base at first) and, with valueHead, a float32
// value head of its own. Its Names, Params, Param and SetParam see only the adapters,
// named with PEFT's saved keys
//
//	base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight   [r, in]
//	base_model.model.model.layers.{i}.self_attn.q_proj.lora_B.weight   [out, r]
//	... linear_attn.in_proj_qkv / ... / mlp.down_proj likewise
//
// followed by the value head's v_head.summary.weight / .bias when it has one;
// Gemma 4's model-level ModelLoRATarget comes first, as
// base_model.model.model.per_layer_model_projection.lora_A.weight.
// A target sits on every layer that has its projection (Config.LoRALayers): a
// hybrid model's q_proj on its attention layers, in_proj_qkv on its Gated
// DeltaNet layers; a target no layer has is refused, naming it.
// Forward computes W x + b + Scale() B A dropout(x) on the targets (dropout only with
// grad on, as PEFT's train mode). The caller still owns and frees base; the LoRA model
// keeps the shared weights alive on its own. Its settings (checkpointing, logits
// chunk, autocast) start as base's; it cannot run an Engine (use NewMergedModel).
func NewLoRAModel(base *Model, c LoRA, valueHead bool, seed uint64) (*Model, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if base == nil || base.h == nil {
		return nil, errors.New("lora model: no base model")
	}
	if base.lora != nil {
		return nil, errors.New("lora model: the base is itself a LoRA model")
	}
	for _, t := range c.Targets {
		if why := base.Config.LoRARefused(t); why != "" {
			return nil, errors.New("lora target " + why)
		}
	}
	// The shim scales by alpha / r: rsLoRA gives it the alpha that makes its Scale.
	alpha := c.Alpha
	if c.RSLoRA {
		alpha = c.Scale() * float64(c.Rank)
	}
	cc := C.ar_lora_config{rank: C.int64_t(c.Rank), alpha: C.double(alpha), dropout: C.double(c.Dropout), targets: c.targetBits()}
	var h C.ar_model
	var msg *C.char
	if err := check("model_lora_new", C.ar_model_lora_new(base.h, &cc, cbool(valueHead), C.uint64_t(seed), &h, &msg), msg); err != nil {
		return nil, err
	}
	m := &Model{h: h, Config: base.Config, DType: base.DType, Device: base.Device, ValueHead: valueHead, lora: c.clone()}
	if err := m.readNames(); err != nil {
		m.Free()
		return nil, err
	}
	return m, nil
}

// LoRA is the adapters' shape, nil for a plain model.
func (m *Model) LoRA() *LoRA {
	if m.lora == nil {
		return nil
	}
	return m.lora.clone()
}

// SetAdapters switches the adapters on (the default) or off; off, Forward equals base's.
func (m *Model) SetAdapters(on bool) error {
	if m.lora == nil {
		return errors.New("set adapters: not a LoRA model")
	}
	var msg *C.char
	return check("model_set_adapters", C.ar_model_set_adapters(m.h, cbool(on), &msg), msg)
}

// NewMergedModel returns a plain model of base's config (no value head, lora's dtype of
// the base) whose target weights are W + Scale() B A, computed in float32 and rounded
// to the base's dtype once, and whose other weights are shared with the base. The decode
// engine runs on it. The adapters are merged whether switched on or off. Writing one
// of its shared weights (SetParam, CopyWeightsFrom) writes the base's.
func NewMergedModel(lora *Model) (*Model, error) {
	if lora == nil || lora.lora == nil {
		return nil, errors.New("merged model: not a LoRA model")
	}
	var h C.ar_model
	var msg *C.char
	if err := check("model_merged_new", C.ar_model_merged_new(lora.h, &h, &msg), msg); err != nil {
		return nil, err
	}
	m := &Model{h: h, Config: lora.Config, DType: lora.DType, Device: lora.Device}
	if err := m.readNames(); err != nil {
		m.Free()
		return nil, err
	}
	if err := m.checkFinite(); err != nil {
		m.Free()
		return nil, fmt.Errorf("merged model: %w (the adapters' scale times B A overflows %s: "+
			"look at the adapter's values and lora_alpha, or merge in a wider --dtype)", err, lora.DType)
	}
	return m, nil
}

// checkFinite returns an error naming the first weight of m that holds a
// NaN or an infinity, with how many it holds. The values are compared on
// m's device; nothing is copied to the host.
func (m *Model) checkFinite() error {
	for _, name := range m.names {
		p, err := m.Param(name)
		if err != nil {
			return err
		}
		n, err := nonFinite(p)
		p.Free()
		if err != nil {
			return fmt.Errorf("weight %s: %w", name, err)
		}
		if n > 0 {
			return fmt.Errorf("weight %s is not finite: %d of its values are NaN or infinite", name, n)
		}
	}
	return nil
}

// nonFinite counts the NaN and infinite values of w: those whose absolute
// value is not below +Inf (NaN compares false).
func nonFinite(w *Tensor) (int64, error) {
	s := NewScope()
	defer s.Close()
	n := s.Sum(s.Not(s.LtScalar(s.Abs(w), math.Inf(1))))
	if err := s.Err(); err != nil {
		return 0, err
	}
	v, err := n.Item()
	return int64(v), err
}

// MergeFrom recomputes dst's target weights from lora's current adapters, in place
// (the engine's fused copies see the change through the version counters).
func (dst *Model) MergeFrom(lora *Model) error {
	if lora == nil || lora.lora == nil {
		return errors.New("merge: the source is not a LoRA model")
	}
	if dst.lora != nil {
		return errors.New("merge: the destination is a LoRA model, not a merged one")
	}
	var msg *C.char
	return check("model_merge_lora", C.ar_model_merge_lora(dst.h, lora.h, &msg), msg)
}
