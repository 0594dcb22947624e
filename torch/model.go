package torch

// #include <stdlib.h>
// #include "agentrl.h"
// #include "internal.h"
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/agentrl/agentrl/internal/hubcache"
	"github.com/agentrl/agentrl/torch/safetensors"
)

// ValueHeadFile holds a model's value head (TRL's v_head.summary.* names),
// saved beside the policy weights so the policy folder stays loadable by
// transformers and vLLM as it is.
const ValueHeadFile = "value_head.safetensors"

// maxHeadDim is the largest head_dim a model may have.
const maxHeadDim = C.AR_MAX_HEAD_DIM

// maxMoELayers is the most layers a model with mixture-of-experts layers
// may have.
const maxMoELayers = C.AR_MAX_MOE_LAYERS

// Model is a Qwen2/Qwen3/Llama decoder whose weights live in libtorch. Parameter
// names are the Hugging Face checkpoint keys.
type Model struct {
	h         C.ar_model
	Config    Config
	DType     DType
	Device    Device
	ValueHead bool
	names     []string
	lora      *LoRA // the adapters' shape of a LoRA model (NewLoRAModel), nil otherwise
}

// NewModel allocates a model with zero weights (set them with LoadWeights
// or InitRandom). With valueHead it also has a linear value head.
func NewModel(cfg Config, dt DType, dev Device, valueHead bool) (*Model, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("model config: %w", err)
	}
	invFreq, attentionFactor, err := cfg.RopeFrequencies()
	if err != nil {
		return nil, fmt.Errorf("model config: %w", err)
	}
	cc := C.ar_model_config{
		vocab: C.int64_t(cfg.Vocab), hidden: C.int64_t(cfg.Hidden), intermediate: C.int64_t(cfg.Intermediate),
		layers: C.int64_t(cfg.Layers), heads: C.int64_t(cfg.Heads), kv_heads: C.int64_t(cfg.KVHeads),
		head_dim: C.int64_t(cfg.HeadDim), rms_eps: C.double(cfg.RMSEps), rope_attention_factor: C.double(attentionFactor),
		tie_embeddings: cbool(cfg.TieEmbeddings), qkv_bias: cbool(cfg.QKVBias()), qk_norm: cbool(cfg.QKNorm()),
		value_head: cbool(valueHead), max_positions: C.int64_t(cfg.MaxPositions),
	}
	for j, f := range invFreq {
		cc.rope_inv_freq[j] = C.double(f)
	}
	if cfg.Sparse() {
		cc.experts, cc.experts_per_token = C.int64_t(cfg.MoE.Experts), C.int64_t(cfg.MoE.ExpertsPerToken)
		cc.moe_intermediate, cc.norm_topk_prob = C.int64_t(cfg.MoE.Intermediate), cbool(cfg.MoE.NormTopKProb)
		cc.shared_expert_intermediate = C.int64_t(cfg.MoE.SharedIntermediate)
		for i := range cfg.Layers {
			if cfg.SparseLayer(i) {
				cc.moe_layer[i] = 1
			}
		}
	}
	if cfg.Window > 0 {
		cc.sliding_window = C.int64_t(cfg.Window)
		for i, on := range cfg.WindowLayers {
			if on {
				cc.sliding_layer[i] = 1
			}
		}
	}
	if cfg.IsGemma4() {
		if err := cfg.fillGemma4(&cc); err != nil {
			return nil, fmt.Errorf("model config: %w", err)
		}
	}
	if cfg.IsQwen35() {
		cc.rotary_dim = C.int64_t(cfg.RotaryDim())
		cc.norm_offset, cc.attn_output_gate = 1, 1
		cc.linear_k_heads, cc.linear_v_heads = C.int64_t(cfg.LinearKeyHeads), C.int64_t(cfg.LinearValueHeads)
		cc.linear_k_dim, cc.linear_v_dim = C.int64_t(cfg.LinearKeyDim), C.int64_t(cfg.LinearValueDim)
		cc.linear_conv_kernel = C.int64_t(cfg.LinearConvKernel)
		for i, t := range cfg.LayerTypes {
			if t == LinearAttention {
				cc.linear_layer[i] = 1
			}
		}
	}
	if cfg.IsNemotron() {
		n := cfg.Nemotron
		cc.nemotron = 1
		cc.mamba_heads, cc.mamba_head_dim, cc.mamba_groups = C.int64_t(n.Heads), C.int64_t(n.HeadDim), C.int64_t(n.Groups)
		cc.ssm_state, cc.mamba_conv_kernel, cc.mamba_chunk = C.int64_t(n.State), C.int64_t(n.ConvKernel), C.int64_t(n.Chunk)
		cc.mamba_conv_bias, cc.mamba_dt_min, cc.mamba_dt_max = cbool(n.ConvBias), C.double(n.DtMin), C.double(n.DtMax)
		for i, b := range n.Blocks {
			cc.block[i] = map[string]C.uint8_t{MambaBlock: C.AR_BLOCK_MAMBA, AttentionBlock: C.AR_BLOCK_ATTENTION, MLPBlock: C.AR_BLOCK_MLP,
				MoEBlock: C.AR_BLOCK_MOE}[b]
		}
		m := cfg.MoE
		cc.moe_latent, cc.n_group, cc.topk_group = C.int64_t(m.Latent), C.int64_t(m.Groups), C.int64_t(m.TopKGroup)
		cc.routed_scaling_factor = C.double(m.Scaling)
	}
	var h C.ar_model
	var msg *C.char
	if err := check("model_new", C.ar_model_new(&cc, C.int(dt), C.int(dev.code()), &h, &msg), msg); err != nil {
		return nil, err
	}
	m := &Model{h: h, Config: cfg, DType: dt, Device: dev, ValueHead: valueHead}
	if err := m.readNames(); err != nil {
		m.Free()
		return nil, err
	}
	return m, nil
}

// readNames fills m.names from the shim.
func (m *Model) readNames() error {
	var names **C.char
	var n C.int
	var msg *C.char
	if err := check("model_param_names", C.ar_model_param_names(m.h, &names, &n, &msg), msg); err != nil {
		return err
	}
	arr := unsafe.Slice(names, int(n))
	for _, p := range arr {
		m.names = append(m.names, C.GoString(p))
		C.free(unsafe.Pointer(p))
	}
	C.free(unsafe.Pointer(names))
	return nil
}

// NewRandomModel makes a model with weights drawn from N(0, 0.02) (norms 1,
// biases 0), reproducibly from seed.
func NewRandomModel(cfg Config, dt DType, dev Device, valueHead bool, seed uint64) (*Model, error) {
	m, err := NewModel(cfg, dt, dev, valueHead)
	if err != nil {
		return nil, err
	}
	if err := m.InitRandom(seed, 0.02); err != nil {
		m.Free()
		return nil, err
	}
	return m, nil
}

// InitRandom redraws every weight.
func (m *Model) InitRandom(seed uint64, std float64) error {
	var msg *C.char
	return check("model_init_random", C.ar_model_init_random(m.h, C.uint64_t(seed), C.double(std), &msg), msg)
}

// Free releases the model's weights.
func (m *Model) Free() {
	if m != nil && m.h != nil {
		C.ar_model_free(m.h)
		m.h = nil
	}
}

// Names lists the parameters in a fixed order (HF keys, then the value head;
// a LoRA model's adapters under PEFT's keys, then its value head).
func (m *Model) Names() []string { return append([]string(nil), m.names...) }

// ParamShape is a parameter's checkpoint key and shape.
type ParamShape struct {
	Name  string
	Shape []int64
}

// Numel is the number of values of the parameter.
func (p ParamShape) Numel() int64 {
	n := int64(1)
	for _, d := range p.Shape {
		n *= d
	}
	return n
}

// ParamShapes lists the parameters of the model, in Names order, with
// their shapes.
func (m *Model) ParamShapes() ([]ParamShape, error) {
	out := make([]ParamShape, 0, len(m.names))
	for _, n := range m.names {
		p, err := m.Param(n)
		if err != nil {
			return nil, err
		}
		shape, err := p.Shape()
		p.Free()
		if err != nil {
			return nil, err
		}
		out = append(out, ParamShape{Name: n, Shape: shape})
	}
	return out, nil
}

// ParamShapes lists the parameters a model of cfg has (with valueHead,
// its value head too), in Names order, with their shapes: those of a
// model made on the meta device, so from the one table the model's
// parameters are made from (cgo/model.h), without allocating them.
func ParamShapes(cfg Config, valueHead bool) ([]ParamShape, error) {
	m, err := NewModel(cfg, Float32, Meta, valueHead)
	if err != nil {
		return nil, err
	}
	defer m.Free()
	return m.ParamShapes()
}

// Param returns a handle sharing the storage of a parameter (the caller
// frees the handle, not the weight).
func (m *Model) Param(name string) (*Tensor, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var out C.ar_tensor
	var msg *C.char
	if err := check("model_param", C.ar_model_param(m.h, cs, &out, &msg), msg); err != nil {
		return nil, err
	}
	return wrap(out), nil
}

// Params returns handles on all parameters, in Names order.
func (m *Model) Params() ([]*Tensor, error) {
	ps := make([]*Tensor, 0, len(m.names))
	for _, n := range m.names {
		p, err := m.Param(n)
		if err != nil {
			for _, q := range ps {
				q.Free()
			}
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// SetParam copies t into the named parameter (converting dtype and device).
func (m *Model) SetParam(name string, t *Tensor) error {
	h, err := t.handle("set_param")
	if err != nil {
		return err
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var msg *C.char
	return check("model_set_param", C.ar_model_set_param(m.h, cs, h, &msg), msg)
}

// CopyWeightsFrom copies every weight of src (same config) into m: how the
// frozen reference policy and a separate critic are made. A value head m
// has and src lacks is kept.
func (m *Model) CopyWeightsFrom(src *Model) error {
	var msg *C.char
	return check("model_copy_weights", C.ar_model_copy_weights(m.h, src.h, &msg), msg)
}

var stDTypes = map[safetensors.DType]DType{
	safetensors.F32: Float32, safetensors.F16: Float16, safetensors.BF16: BFloat16,
	safetensors.F64: Float64, safetensors.I64: Int64, safetensors.I32: Int32,
}

// LoadModel reads a Hugging Face model folder (config.json and one or many
// safetensors files) into a model of dtype dt on dev. With valueHead, the
// value head is read from value_head.safetensors when present, else drawn
// at random. A missing, misshapen or non-finite (NaN, infinite) tensor is
// an error naming it. Every name, shape and dtype is checked against the
// files' headers before any weight is allocated: a config.json that
// disagrees with its weights (num_hidden_layers 100000 beside a
// checkpoint of 2 layers) is that error, not an allocation the size of
// the model it describes. dir may be a Hugging Face model id
// ("Qwen/Qwen3.5-0.8B", "...@REVISION") in the local cache (hubcache).
func LoadModel(dir string, dt DType, dev Device, valueHead bool) (*Model, error) {
	dir, err := hubcache.Resolve(dir)
	if err != nil {
		return nil, err
	}
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	policy, err := safetensors.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("load weights: %w", err)
	}
	defer policy.Close()
	if err := checkWeights(policy, dir, cfg, false); err != nil {
		return nil, err
	}
	var head *safetensors.Reader
	if vh := filepath.Join(dir, ValueHeadFile); valueHead {
		if _, err := os.Stat(vh); err == nil {
			if head, err = safetensors.Open(vh); err != nil {
				return nil, fmt.Errorf("load weights: %w", err)
			}
			defer head.Close()
			if err := checkWeights(head, vh, cfg, true); err != nil {
				return nil, err
			}
		}
	}
	m, err := NewModel(cfg, dt, dev, valueHead)
	if err != nil {
		return nil, err
	}
	if valueHead {
		// Drawn first; replaced below when the folder has a saved head.
		if err := m.InitRandom(0, 0.02); err != nil {
			m.Free()
			return nil, err
		}
	}
	shapes, err := m.ParamShapes()
	if err != nil {
		m.Free()
		return nil, err
	}
	if err := m.loadFrom(policy, shapes, false); err != nil {
		m.Free()
		return nil, err
	}
	if head != nil {
		if err := m.loadFrom(head, shapes, true); err != nil {
			m.Free()
			return nil, err
		}
	}
	return m, nil
}

// CheckWeightsIfPresent checks the headers of the safetensors weights of
// the model folder dir (or Hugging Face model id) against cfg as LoadModel
// does before it allocates anything, reading no weight: the layer count
// first, then each tensor's name, shape and dtype. A folder without
// weights (a config.json alone, as a dry run may estimate from) has
// nothing to check and passes.
func CheckWeightsIfPresent(dir string, cfg Config) error {
	dir, err := hubcache.Resolve(dir)
	if err != nil {
		return err
	}
	shards, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, safetensors.IndexFileName)); len(shards) == 0 && err != nil {
		return nil
	}
	r, err := safetensors.Open(dir)
	if err != nil {
		return fmt.Errorf("load weights: %w", err)
	}
	defer r.Close()
	return checkWeights(r, dir, cfg, false)
}

// IsValueHead reports whether a parameter name is the value head's (TRL's
// v_head.summary.* names, AR_VALUE_HEAD_PREFIX in cgo/agentrl.h).
func IsValueHead(name string) bool { return strings.HasPrefix(name, C.AR_VALUE_HEAD_PREFIX) }

// layerPrefix begins the names of a decoder layer's parameters, followed
// by the layer's index and a dot (cgo/model.cpp names them so, as the
// Hugging Face checkpoints do).
const layerPrefix = "model.layers."

// checkWeights checks the headers of the checkpoint r (read from path)
// against the parameters a model of cfg has (the value head's or the rest,
// by valueHead): each is there, with its shape and a dtype a weight can
// have, and no tensor is left over. Nothing is read but the headers, and
// nothing the size of the model is made: the shapes are those of a model
// of one layer on the meta device, every layer having those of the one of
// its kind (layerKinds: dense or sparse MLP; Gated DeltaNet or attention).
// A multimodal Qwen3.5 checkpoint holds the text model's model.* under
// model.language_model.; a sparse layer's experts may be per-expert
// tensors or fused ones (fusedExperts). The policy's layer count is
// compared with the layers the files hold before any layer is walked, so
// a num_hidden_layers of 9e18 is refused at once.
func checkWeights(r *safetensors.Reader, path string, cfg Config, valueHead bool) error {
	if held := heldLayers(r, cfg); !valueHead && cfg.Layers > held {
		return fmt.Errorf("load weights from %s: num_hidden_layers %d in config.json, but the checkpoint holds %d layers "+
			"(no tensor %s%d.*): the config and the weights disagree", path, cfg.Layers, held, cfg.checkpointName(layerPrefix), held)
	}
	kinds, others, err := layerKinds(cfg, valueHead)
	if err != nil {
		return err
	}
	check := func(name string, shape []int64) error {
		if IsValueHead(name) != valueHead {
			return nil
		}
		info, ok := r.Info(cfg.checkpointName(name))
		if !ok {
			return fmt.Errorf("load weights from %s: tensor %s is missing", path, cfg.checkpointName(name))
		}
		if !slices.Equal(info.Shape, shape) {
			return fmt.Errorf("load weights from %s: tensor %s has shape %v, the model config.json describes needs %v",
				info.File, name, info.Shape, shape)
		}
		if _, ok := stDTypes[info.DType]; !ok {
			return fmt.Errorf("load weights from %s: tensor %s has dtype %s, which cannot be a weight", path, name, info.DType)
		}
		return nil
	}
	for _, ps := range others {
		if err := check(ps.Name, ps.Shape); err != nil {
			return err
		}
	}
	// Layer by layer, in the order the model lists them, so the first
	// layer the checkpoint lacks is the one named.
	for i := range cfg.Layers {
		k := kinds[cfg.layerKind(i)]
		fused := !valueHead && cfg.SparseLayer(i) && fusedExperts(r, cfg, i)
		for _, rest := range k.names {
			if fused && isExpertParam(rest) {
				continue
			}
			if err := check(fmt.Sprintf("%s%d.%s", layerPrefix, i, rest), k.shapes[rest]); err != nil {
				return err
			}
		}
		if fused {
			for _, f := range cfg.fusedExpertShapes() {
				if err := check(fmt.Sprintf("%s%d.%s", layerPrefix, i, f.Name), f.Shape); err != nil {
					return err
				}
			}
		}
	}
	want := func(name string) bool {
		if rest, ok := strings.CutPrefix(name, wrappedTextPrefix); ok && cfg.Wrapped {
			name = "model." + rest
		} else if rest, ok := strings.CutPrefix(name, nemotronCheckpointPrefix); ok && cfg.IsNemotron() {
			name = "model." + rest
		} else if (cfg.Wrapped || cfg.IsNemotron()) && strings.HasPrefix(name, "model.") {
			return false // the text model's key is model.language_model.*, Nemotron-H's backbone.*
		}
		if _, ok := strings.CutPrefix(name, layerPrefix); ok {
			i, rest, ok := layerParam(name)
			if !ok || i >= cfg.Layers {
				return false
			}
			if cfg.SparseLayer(i) && fusedExperts(r, cfg, i) {
				if isExpertParam(rest) {
					return false
				}
				if slices.ContainsFunc(cfg.fusedExpertShapes(), func(f ParamShape) bool { return f.Name == rest }) {
					return true
				}
			}
			_, known := kinds[cfg.layerKind(i)].shapes[rest]
			return known
		}
		return slices.ContainsFunc(others, func(ps ParamShape) bool { return ps.Name == name })
	}
	if unused := unusedTensors(want, cfg, r.Names(), valueHead); len(unused) > 0 {
		return fmt.Errorf("load weights from %s: %d tensors are not used by the model config.json describes (%s): "+
			"the config and the weights disagree (as transformers' strict loading, this is an error)", path, len(unused), strings.Join(unused, ", "))
	}
	return nil
}

// heldLayers is the number of decoder layers the checkpoint r holds: one
// more than the highest layer index among its tensors (under
// model.language_model. for a multimodal Qwen3.5), 0 when none.
func heldLayers(r *safetensors.Reader, cfg Config) int {
	held := 0
	for _, n := range r.Names() {
		if rest, ok := strings.CutPrefix(n, wrappedTextPrefix); ok && cfg.Wrapped {
			n = "model." + rest
		} else if rest, ok := strings.CutPrefix(n, nemotronCheckpointPrefix); ok && cfg.IsNemotron() {
			n = "model." + rest
		}
		if i, _, ok := layerParam(n); ok && i >= held {
			held = i + 1
		}
	}
	return held
}

// layerParam splits a layer's parameter name model.layers.{i}.{rest} into
// i and rest; ok is false for any other name.
func layerParam(name string) (i int, rest string, ok bool) {
	after, ok := strings.CutPrefix(name, layerPrefix)
	if !ok {
		return 0, "", false
	}
	idx, rest, ok := strings.Cut(after, ".")
	i, err := strconv.Atoi(idx)
	if !ok || err != nil || i < 0 || strconv.Itoa(i) != idx {
		return 0, "", false
	}
	return i, rest, true
}

// layerKind is which kind of layer one is: whether its MLP is sparse,
// whether it is a Gated DeltaNet layer, and a Nemotron-H layer's block; a
// Gemma 4 layer is its own kind (gemma: its index + 1; its shapes depend
// on its type and place).
type layerKind struct {
	sparse, linear bool
	gemma          int
	block          string
}

// layerKind is layer i's kind.
func (c Config) layerKind(i int) layerKind {
	if c.IsGemma4() {
		return layerKind{gemma: i + 1}
	}
	k := layerKind{sparse: c.SparseLayer(i), linear: c.LayerTypes != nil && c.LayerTypes[i] == LinearAttention}
	if c.IsNemotron() {
		k.block = c.Nemotron.Blocks[i]
	}
	return k
}

// layerParams is one layer kind's parameters: their shapes by the name
// after the layer's prefix, and the names in the model's order.
type layerParams struct {
	shapes map[string][]int64
	names  []string
}

// layerKinds lists the parameters of each kind of layer cfg has (those of
// a one-layer model of that kind on the meta device) and the parameters
// outside the layers; the value head's too with valueHead.
func layerKinds(cfg Config, valueHead bool) (map[layerKind]layerParams, []ParamShape, error) {
	kinds := map[layerKind]layerParams{}
	var others []ParamShape
	if cfg.IsGemma4() {
		return gemma4LayerKinds(cfg, valueHead)
	}
	for i := range cfg.Layers {
		k := cfg.layerKind(i)
		if _, done := kinds[k]; done {
			continue
		}
		one := cfg
		one.Layers = 1
		if k.sparse {
			one.MoE.SparseStep, one.MoE.MLPOnlyLayers = 1, nil // layer 0 sparse
		} else {
			one.MoE.Experts = 0
		}
		if cfg.IsNemotron() {
			one.Nemotron.Blocks = []string{k.block}
		}
		if cfg.LayerTypes != nil {
			one.LayerTypes = []string{FullAttention}
			if k.linear {
				one.LayerTypes = []string{LinearAttention}
			}
		}
		shapes, err := ParamShapes(one, valueHead)
		if err != nil {
			return nil, nil, err
		}
		lp := layerParams{shapes: map[string][]int64{}}
		others = others[:0]
		for _, ps := range shapes {
			if rest, ok := strings.CutPrefix(ps.Name, layerPrefix+"0."); ok {
				lp.shapes[rest] = ps.Shape
				lp.names = append(lp.names, rest)
			} else {
				others = append(others, ps)
			}
		}
		kinds[k] = lp
	}
	return kinds, others, nil
}

// loadFrom copies the weights of r, whose headers checkWeights passed,
// into m: the value head's or the rest, by valueHead.
func (m *Model) loadFrom(r *safetensors.Reader, shapes []ParamShape, valueHead bool) error {
	for _, ps := range shapes {
		name := ps.Name
		if IsValueHead(name) != valueHead {
			continue
		}
		src := m.Config.checkpointName(name)
		var b []byte
		var err error
		info, _ := r.Info(src)
		if i, rest, ok := layerParam(name); ok && isExpertParam(rest) && fusedExperts(r, m.Config, i) {
			// One expert's rows of a fused tensor.
			var lo, hi int64
			src, lo, hi = m.Config.fusedExpertSource(i, rest)
			info, _ = r.Info(src)
			size := int64(info.DType.Size())
			b, err = r.BytesRange(src, lo*size, (hi-lo)*size)
			info.Shape = ps.Shape
		} else {
			b, err = r.Bytes(src)
		}
		if err != nil {
			return fmt.Errorf("load weights: %w", err)
		}
		if i := safetensors.FirstNonFinite(info.DType, b); i >= 0 {
			return fmt.Errorf("load weights from %s: tensor %s is not finite: element %d is NaN or infinite", info.File, name, i)
		}
		t, err := FromBytes(b, stDTypes[info.DType], CPU, info.Shape...)
		if err != nil {
			return fmt.Errorf("load weights from %s: tensor %s: %w", info.File, name, err)
		}
		err = m.SetParam(name, t)
		t.Free()
		if err != nil {
			return fmt.Errorf("load weights from %s: %w", info.File, err)
		}
	}
	return nil
}

// unusedTensors lists the names in a checkpoint that the model does not
// load (at most 8, then a count), as transformers' strict loading reports
// "unexpected keys". Ignored, as transformers ignores them: rotary
// inv_freq buffers of older checkpoints, lm_head.weight when the
// embeddings are tied (it is the embedding matrix), and the other side of
// the value head (a value head saved with the policy, or policy weights
// beside a value head file); and, as Qwen3_5ForCausalLM skips them, a
// Qwen3.5 checkpoint's vision tower and MTP weights.
func unusedTensors(want func(name string) bool, cfg Config, names []string, valueHead bool) []string {
	var out []string
	for _, n := range names {
		switch {
		case want(n), IsValueHead(n) != valueHead, strings.HasSuffix(n, ".rotary_emb.inv_freq"),
			n == "lm_head.weight" && cfg.TieEmbeddings, cfg.skippedTensor(n):
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	if len(out) > 8 {
		out = append(out[:8], fmt.Sprintf("and %d more", len(out)-8))
	}
	return out
}

var stOfDType = map[DType]safetensors.DType{Float32: safetensors.F32, Float16: safetensors.F16, BFloat16: safetensors.BF16}

// Save writes the model as a Hugging Face folder: config.json and
// model.safetensors (sharded above 5 GB) in the model's dtype (a
// parameter kept wider in its own), plus
// value_head.safetensors when the model has a value head. Other files in
// dir (tokenizer, optimizer state) are left alone. A LoRA model is an
// error: its adapters are saved with peft.Save, or merged (NewMergedModel)
// and saved whole.
func (m *Model) Save(dir string) error {
	if m.lora != nil {
		return errors.New("save model: a LoRA model is saved with peft.Save (or merged with NewMergedModel, then saved)")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	cfg := m.Config
	cfg.TorchDType = map[DType]string{Float32: "float32", Float16: "float16", BFloat16: "bfloat16"}[m.DType]
	cj, err := cfg.JSON()
	if err != nil {
		return fmt.Errorf("save model config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cj, 0o644); err != nil {
		return fmt.Errorf("save model config: %w", err)
	}
	sdt, ok := stOfDType[m.DType]
	if !ok {
		return fmt.Errorf("save model: dtype %s cannot be saved", m.DType)
	}
	// Each tensor is copied out of libtorch as its turn to be written
	// comes: the save holds one tensor's bytes at a time.
	var policy, head []safetensors.Tensor
	for _, name := range m.names {
		p, err := m.Param(name)
		if err != nil {
			return err
		}
		shape, err := p.Shape()
		// A parameter kept wider than the model (a Nemotron-H router's, in
		// float32) is saved in its own dtype, as transformers saves it.
		pdt, psdt := m.DType, sdt
		if d := p.DType(); d != m.DType {
			if s, ok := stOfDType[d]; ok {
				pdt, psdt = d, s
			}
		}
		p.Free()
		if err != nil {
			return err
		}
		saved := name
		if m.Config.IsNemotron() {
			saved = m.Config.checkpointName(name) // backbone.*, as the published checkpoints
		}
		st := safetensors.Tensor{Name: saved, DType: psdt, Shape: shape, Fill: func(dst []byte) error {
			p, err := m.Param(name)
			if err != nil {
				return err
			}
			defer p.Free()
			return p.CopyBytes(pdt, dst)
		}}
		if IsValueHead(name) {
			head = append(head, st)
		} else {
			policy = append(policy, st)
		}
	}
	meta := map[string]string{"format": "pt"}
	if err := safetensors.WriteSharded(dir, policy, meta, 5<<30); err != nil {
		return fmt.Errorf("save model: %w", err)
	}
	if len(head) > 0 {
		if err := safetensors.Write(filepath.Join(dir, ValueHeadFile), head, meta); err != nil {
			return fmt.Errorf("save value head: %w", err)
		}
	}
	return nil
}

// Batch is a right-padded batch of token sequences, row-major [B*T]: IDs,
// Attn (1 = real token, 0 = padding) and Positions (RoPE position ids).
type Batch struct {
	B, T      int
	IDs       []int64
	Attn      []int64
	Positions []int64
}

func (b Batch) check() error {
	n := b.B * b.T
	if b.B <= 0 || b.T <= 0 || len(b.IDs) != n || len(b.Attn) != n || len(b.Positions) != n {
		return fmt.Errorf("batch: want %d ids, attn and positions for [%d,%d], have %d, %d, %d", n, b.B, b.T, len(b.IDs), len(b.Attn), len(b.Positions))
	}
	return nil
}

// Logits runs the full sequence and returns logits [B,T,V] (f32, f64 for a
// Float64 model; no grad).
func (m *Model) Logits(b Batch) (*Tensor, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	var out C.ar_tensor
	var msg *C.char
	rc := C.ar_model_logits(m.h, (*C.int64_t)(unsafe.Pointer(&b.IDs[0])), (*C.int64_t)(unsafe.Pointer(&b.Attn[0])),
		(*C.int64_t)(unsafe.Pointer(&b.Positions[0])), C.int64_t(b.B), C.int64_t(b.T), &out, &msg)
	if err := check("model_logits", rc, msg); err != nil {
		return nil, err
	}
	return wrap(out), nil
}

// ForwardOptions says what the training forward returns.
type ForwardOptions struct {
	Temperature float64 // the sampling temperature the logprobs are taken at (0 means 1)
	Grad        bool    // keep the autograd graph of the logprobs and values
	Entropy     bool    // return the entropies (a diagnostic, without a graph, unless EntropyGrad)
	EntropyGrad bool    // with Grad: keep the entropy's graph too (an entropy bonus is in the loss)
	Values      bool    // needs a value head
	// ValuesOnly skips the LM head: no logprobs and no entropy, so the
	// full-vocabulary log-softmax is never built (a critic's forward).
	ValuesOnly bool
	// RouterAuxLoss returns the routers' load-balancing loss of a model
	// with mixture-of-experts layers (Output.AuxLoss), over the real
	// tokens, as transformers' load_balancing_loss_func computes it.
	RouterAuxLoss bool
	// ReplayRouting, when not nil, is routing replay: each sparse layer
	// takes, for each token of the batch, the experts it gives (its
	// [B,T] tokens, padding included, each with distinct experts) instead
	// of its router's most probable ones, weighted by the router's
	// probabilities of them (see Routing).
	ReplayRouting *Routing
	// RecordRouting returns the experts each sparse layer took for each
	// token (Output.Routing).
	RecordRouting bool
	// HeadRows, when not nil, are the outputs the LM head computes, as
	// flat indices b*(T-1)+t into Forward's [B,T-1]: the log-probabilities
	// and entropies hold 0 everywhere else, and the head's work shrinks
	// with them (the tokens no loss reads: prompts, tool results,
	// padding). Forward only; the values are computed everywhere.
	HeadRows []int64
}

// Output is the training forward's result, each [B,T-1]: index t refers to
// predicting token t+1 from the prefix through t. Fields not asked for are nil.
type Output struct {
	LogProbs, Entropy, Values *Tensor
	AuxLoss                   *Tensor // a scalar (ForwardOptions.RouterAuxLoss), with a graph under Grad
	// Routing is the experts the tokens took at the sparse layers, [B,T]
	// tokens (ForwardOptions.RecordRouting); not a tensor.
	Routing *Routing
}

// Free releases the output tensors.
func (o Output) Free() {
	o.LogProbs.Free()
	o.Entropy.Free()
	o.Values.Free()
	o.AuxLoss.Free()
}

// Forward is the training forward: per-token log-probabilities of the next
// tokens at the given temperature, and optionally entropies and values.
func (m *Model) Forward(b Batch, opt ForwardOptions) (Output, error) {
	if err := b.check(); err != nil {
		return Output{}, err
	}
	o, err := newForwardOuts(opt)
	if err != nil {
		return Output{}, err
	}
	rows, n, err := headRows(b, opt.HeadRows)
	if err != nil {
		return Output{}, err
	}
	if opt.ReplayRouting != nil || opt.RecordRouting {
		return m.forwardRouted(b, opt, o, rows, n)
	}
	var msg *C.char
	rc := C.ar_model_forward(m.h, (*C.int64_t)(unsafe.Pointer(&b.IDs[0])), (*C.int64_t)(unsafe.Pointer(&b.Attn[0])),
		(*C.int64_t)(unsafe.Pointer(&b.Positions[0])), C.int64_t(b.B), C.int64_t(b.T), o.temp, forwardFlags(opt),
		rows, n, o.pLp, o.pEnt, o.pVal, o.pAux, &msg)
	if err := check("model_forward", rc, msg); err != nil {
		return Output{}, err
	}
	return o.output(), nil
}

// headRows is HeadRows for the shim (nil for all), refusing an empty list
// (a forward whose head computes nothing) and an index outside b's
// [B,T-1] outputs.
func headRows(b Batch, rows []int64) (*C.int64_t, C.int64_t, error) {
	if rows == nil {
		return nil, 0, nil
	}
	if len(rows) == 0 {
		return nil, 0, errors.New("model forward: HeadRows lists no output (nil computes all)")
	}
	for j, r := range rows {
		if r < 0 || r >= int64(b.B*(b.T-1)) {
			return nil, 0, fmt.Errorf("model forward: head row %d (%d) is outside 0..%d", j, r, b.B*(b.T-1)-1)
		}
	}
	return (*C.int64_t)(unsafe.Pointer(&rows[0])), C.int64_t(len(rows)), nil
}

// forwardOuts are the results a training forward asks the shim for, as
// opt says: log-probabilities unless ValuesOnly, entropies with Entropy,
// values with Values; and its temperature (1 for 0).
type forwardOuts struct {
	// res is what the shim fills in (log-probabilities, entropies,
	// values): an allocation of its own, holding no Go pointers, so that
	// pointers into it may be passed to C.
	res                   *[4]C.ar_tensor
	pLp, pEnt, pVal, pAux *C.ar_tensor
	temp                  C.double
}

// newForwardOuts reads opt, refusing ValuesOnly without Values.
func newForwardOuts(opt ForwardOptions) (*forwardOuts, error) {
	o := &forwardOuts{res: new([4]C.ar_tensor), temp: C.double(opt.Temperature)}
	if opt.Temperature == 0 {
		o.temp = 1
	}
	switch {
	case opt.ValuesOnly && !opt.Values:
		return nil, errors.New("model forward: ValuesOnly without Values asks for nothing")
	case opt.ValuesOnly:
	case opt.Entropy:
		o.pLp, o.pEnt = &o.res[0], &o.res[1]
	default:
		o.pLp = &o.res[0]
	}
	if opt.Values {
		o.pVal = &o.res[2]
	}
	if opt.RouterAuxLoss {
		o.pAux = &o.res[3]
	}
	return o, nil
}

// output wraps what the shim filled in.
func (o *forwardOuts) output() Output {
	var out Output
	if o.pLp != nil {
		out.LogProbs = wrap(o.res[0])
	}
	if o.pEnt != nil {
		out.Entropy = wrap(o.res[1])
	}
	if o.pVal != nil {
		out.Values = wrap(o.res[2])
	}
	if o.pAux != nil {
		out.AuxLoss = wrap(o.res[3])
	}
	return out
}

// forwardFlags are ar_model_forward's flags for opt.
func forwardFlags(opt ForwardOptions) C.int {
	var f C.int
	if opt.Grad {
		f |= C.AR_FORWARD_GRAD
		if opt.EntropyGrad {
			f |= C.AR_FORWARD_ENTROPY_GRAD
		}
	}
	return f
}

// SetAutocast turns mixed precision to dt (BFloat16 or Float16) on or
// off: the training forward, the logprob forward and the decode
// engine run under autocast on the model's device type, as in
// `torch.autocast(device, dtype)`, while weights, gradients and optimizer
// state stay in the model's dtype. Float16 needs loss scaling, which the
// trainer does not do: use BFloat16.
func (m *Model) SetAutocast(on bool, dt DType) error {
	code := C.int(-1)
	if on {
		code = C.int(dt)
	}
	var msg *C.char
	return check("model_set_autocast", C.ar_model_set_autocast(m.h, code, &msg), msg)
}

// AttentionMode says how a model's attention runs.
type AttentionMode int

// The attention modes: AttentionAuto runs libtorch's
// scaled_dot_product_attention (SDPA) on CUDA (libtorch 2.5 and later) and
// plain ops elsewhere; AttentionSDPA takes the SDPA path on every device
// (for tests: the grouped layout the CUDA path uses, on the CPU);
// AttentionMath never takes it.
const (
	AttentionAuto AttentionMode = iota
	AttentionSDPA
	AttentionMath
)

// SetAttention chooses how the model's attention runs.
func (m *Model) SetAttention(a AttentionMode) error {
	var msg *C.char
	return check("model_set_attention", C.ar_model_set_attention(m.h, C.int(a), &msg), msg)
}

// SDPABackend names the kernel the model's last scaled_dot_product_attention
// call ran ("math", "flash", "efficient", "cudnn", "overrideable", as
// libtorch's at::SDPBackend), or "" when attention has not run through
// SDPA yet.
func (m *Model) SDPABackend() (string, error) {
	var b C.int
	var msg *C.char
	if err := check("model_sdpa_backend", C.ar_model_sdpa_backend(m.h, &b, &msg), msg); err != nil {
		return "", err
	}
	switch int(b) {
	case -1:
		return "", nil
	case 0:
		return "math", nil
	case 1:
		return "flash", nil
	case 2:
		return "efficient", nil
	case 3:
		return "cudnn", nil
	case 4:
		return "overrideable", nil
	}
	return fmt.Sprintf("SDPBackend(%d)", int(b)), nil
}

// SetCheckpointing turns activation checkpointing of the training forward
// on or off: each layer keeps only its input and is recomputed in the
// backward pass, trading about a third more compute for activation memory.
func (m *Model) SetCheckpointing(on bool) error {
	var msg *C.char
	return check("model_set_checkpointing", C.ar_model_set_checkpointing(m.h, cbool(on), &msg), msg)
}

// SetLogitsChunk sets how many tokens of the training forward's logits are
// computed at a time: the taken tokens' log-probabilities and the entropies
// come from the last hidden states in chunks of that many tokens, recomputed
// the same way in the backward pass, so the [tokens, vocabulary] logits are
// never held whole. 0 computes them whole. Models start at 256.
func (m *Model) SetLogitsChunk(tokens int) error {
	if tokens < 0 {
		return fmt.Errorf("model logits chunk: want 0 (whole) or a positive number of tokens, got %d", tokens)
	}
	var msg *C.char
	return check("model_set_logits_chunk", C.ar_model_set_logits_chunk(m.h, C.int64_t(tokens), &msg), msg)
}

// tokenLogprobs is the chunked computation behind Forward on its own (the
// seam its tests use): for hidden states h [N,H], an LM head w [V,H] and
// targets [N] (int64), the log-probability of each target under
// softmax(h w^T / temperature) and, with opt.Entropy, each row's entropy,
// chunk rows at a time; opt.Grad and opt.EntropyGrad as in Forward.
func tokenLogprobs(h, w, targets *Tensor, temperature float64, chunk int, opt ForwardOptions) (logprobs, entropy *Tensor, err error) {
	var hh, wh, th C.ar_tensor
	if hh, err = h.handle("token_logprobs"); err != nil {
		return nil, nil, err
	}
	if wh, err = w.handle("token_logprobs"); err != nil {
		return nil, nil, err
	}
	if th, err = targets.handle("token_logprobs"); err != nil {
		return nil, nil, err
	}
	var lp, ent C.ar_tensor
	pEnt := (*C.ar_tensor)(nil)
	if opt.Entropy {
		pEnt = &ent
	}
	var msg *C.char
	rc := C.ar_token_logprobs(hh, wh, th, C.double(temperature), C.int64_t(chunk), forwardFlags(opt), &lp, pEnt, &msg)
	if err := check("token_logprobs", rc, msg); err != nil {
		return nil, nil, err
	}
	if opt.Entropy {
		entropy = wrap(ent)
	}
	return wrap(lp), entropy, nil
}
