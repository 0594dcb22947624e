package peft

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/safetensors"
)

// Save writes lora's adapters to the folder dir as PEFT does:
// adapter_config.json (baseName as base_model_name_or_path) and
// adapter_model.safetensors, and a value head in value_head.safetensors.
// Each file is written atomically; other files in dir are left alone.
func Save(dir string, lora *torch.Model, baseName string) error {
	c := lora.LoRA()
	if c == nil {
		return fmt.Errorf("peft save %s: the model has no adapters", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("peft save: %w", err)
	}
	var adapters, head []safetensors.Tensor
	for _, name := range lora.Names() {
		st, err := tensorOf(lora, name)
		if err != nil {
			return fmt.Errorf("peft save %s: %w", dir, err)
		}
		if torch.IsValueHead(name) {
			head = append(head, st)
		} else {
			adapters = append(adapters, st)
		}
	}
	meta := map[string]string{"format": "pt"}
	if err := safetensors.Write(filepath.Join(dir, WeightsFile), adapters, meta); err != nil {
		return fmt.Errorf("peft save: %w", err)
	}
	if len(head) > 0 {
		if err := safetensors.Write(filepath.Join(dir, torch.ValueHeadFile), head, meta); err != nil {
			return fmt.Errorf("peft save: %w", err)
		}
	}
	if err := writeConfig(dir, *c, baseName); err != nil {
		return fmt.Errorf("peft save: %w", err)
	}
	return nil
}

// tensorOf is a parameter of m in f32, as a safetensors tensor.
func tensorOf(m *torch.Model, name string) (safetensors.Tensor, error) {
	p, err := m.Param(name)
	if err != nil {
		return safetensors.Tensor{}, err
	}
	defer p.Free()
	shape, err := p.Shape()
	if err != nil {
		return safetensors.Tensor{}, err
	}
	b, err := p.Bytes(torch.Float32)
	if err != nil {
		return safetensors.Tensor{}, fmt.Errorf("tensor %s: %w", name, err)
	}
	return safetensors.Tensor{Name: name, DType: safetensors.F32, Shape: shape, Data: b}, nil
}

// adapterKey is PEFT's saved key of one adapter matrix: of a layer's
// module, in a block or directly under the layer, or of a module of the
// model (no layer: Gemma 4's per_layer_model_projection).
var adapterKey = regexp.MustCompile(`^base_model\.model\.model\.(?:layers\.(\d+)\.(?:(self_attn|linear_attn|mlp|mixer)\.)?)?([a-z_]+)\.lora_([AB])(\.[^.]+)?\.weight$`)

// Load reads the adapter folder dir into a new LoRA model over base
// (torch.NewLoRAModel with the folder's config; with valueHead, a value
// head read from value_head.safetensors when the folder has one, else
// fresh from seed). A folder that does not fit base is refused with an
// error naming what differs: a target module base lacks, a layer beyond
// base's, a tensor whose shape is not the rank over base's projection, a
// missing or unexpected key, a rank that disagrees with the tensors.
func Load(dir string, base *torch.Model, valueHead bool, seed uint64) (*torch.Model, error) {
	if _, err := os.Stat(filepath.Join(dir, WeightsFile)); errors.Is(err, os.ErrNotExist) {
		if _, berr := os.Stat(filepath.Join(dir, binFile)); berr == nil {
			return nil, fmt.Errorf("adapter folder %s holds %s (a pickle), which agentrl does not read: convert it to %s (PEFT's save_pretrained writes safetensors by default)", dir, binFile, WeightsFile)
		}
		return nil, fmt.Errorf("adapter folder %s: no %s", dir, WeightsFile)
	}
	c, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	shape, err := c.Over(base.Config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ConfigFile), err)
	}
	path := filepath.Join(dir, WeightsFile)
	r, err := safetensors.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if err := checkKeys(path, r.Names(), shape, base.Config); err != nil {
		return nil, err
	}
	if err := checkShapes(path, r, shape, base); err != nil {
		return nil, err
	}
	m, err := torch.NewLoRAModel(base, shape, valueHead, seed)
	if err != nil {
		return nil, fmt.Errorf("adapter folder %s: %w", dir, err)
	}
	if err := loadTensors(m, r, path, false, shape.Rank); err != nil {
		m.Free()
		return nil, err
	}
	if valueHead {
		vh := filepath.Join(dir, torch.ValueHeadFile)
		if _, err := os.Stat(vh); err == nil {
			hr, err := safetensors.Open(vh)
			if err == nil {
				err = loadTensors(m, hr, vh, true, shape.Rank)
				hr.Close()
			}
			if err != nil {
				m.Free()
				return nil, err
			}
		}
	}
	return m, nil
}

// checkKeys checks the file's keys against the config and the base (of
// config base) before any model is made: every key an adapter matrix of a
// listed target on a layer the base has, that has the target's
// projection (or of the model's own target, which the base has), with no
// adapter name in it.
func checkKeys(path string, names []string, c torch.LoRA, base torch.Config) error {
	layers := base.Layers
	for _, n := range names {
		k := adapterKey.FindStringSubmatch(n)
		if k != nil && k[1] == "" {
			if err := checkModelKey(path, n, k, c, base); err != nil {
				return err
			}
			continue
		}
		if k == nil {
			return fmt.Errorf("%s: unexpected tensor %s: not an adapter matrix of a decoder layer (base_model.model.model.layers.{i}.self_attn|linear_attn|mlp|mixer.<module>.lora_A|lora_B.weight)", path, n)
		}
		i, _ := strconv.Atoi(k[1])
		switch {
		case k[5] != "":
			return fmt.Errorf("%s: tensor %s carries an adapter name (%s); PEFT saves the keys without it", path, n, strings.TrimPrefix(k[5], "."))
		case base.LoRAModule(k[3]) != modulePath(k[2], k[3]):
			return fmt.Errorf("%s: tensor %s adapts %s, a module the base does not have (it has %s)", path, n, modulePath(k[2], k[3]), strings.Join(torch.LoRATargets, ", "))
		case !slices.Contains(c.Targets, k[3]):
			return fmt.Errorf("%s: tensor %s adapts %s, which target_modules (%s) does not list", path, n, k[3], strings.Join(c.Targets, ", "))
		case i >= layers:
			return fmt.Errorf("%s: tensor %s is on layer %d, but the base has %d layers (0..%d)", path, n, i, layers, layers-1)
		case !slices.Contains(base.LoRALayers(k[3]), i):
			return fmt.Errorf("%s: tensor %s is on layer %d, which has no %s (the base has it on layers %v)", path, n, i,
				base.LoRAModule(k[3]), base.LoRALayers(k[3]))
		}
	}
	return nil
}

// checkModelKey checks key n (its adapterKey match k) of a module of the
// model, not of a layer: it must be the model's target, listed, and the
// base must have it.
func checkModelKey(path, n string, k []string, c torch.LoRA, base torch.Config) error {
	switch {
	case k[3] != torch.ModelLoRATarget:
		return fmt.Errorf("%s: unexpected tensor %s: not an adapter matrix of a decoder layer (base_model.model.model.layers.{i}.self_attn|linear_attn|mlp|mixer.<module>.lora_A|lora_B.weight) or of the model's %s", path, n, torch.ModelLoRATarget)
	case k[5] != "":
		return fmt.Errorf("%s: tensor %s carries an adapter name (%s); PEFT saves the keys without it", path, n, strings.TrimPrefix(k[5], "."))
	case !slices.Contains(c.Targets, k[3]):
		return fmt.Errorf("%s: tensor %s adapts %s, which target_modules (%s) does not list", path, n, k[3], strings.Join(c.Targets, ", "))
	case !base.HasLoRATarget(k[3]):
		return fmt.Errorf("%s: tensor %s adapts model.%s, which the base does not have (a Gemma 4's with per-layer inputs)", path, n, k[3])
	}
	return nil
}

// baseKey is a base weight an adapter can sit on: a layer's, in a block or
// directly under the layer, or the model's own.
var baseKey = regexp.MustCompile(`^model\.(?:layers\.\d+\.(?:(self_attn|linear_attn|mlp|mixer)\.)?)?([a-z_]+)\.weight$`)

// checkShapes checks, from the file's headers alone and before anything is
// allocated, that every adapter matrix the config asks for is there, a
// float, and shaped as the rank over base's projection: lora_A [r, in],
// lora_B [out, r]. A rank the tensors do not have is refused here, so it
// never sizes an allocation.
func checkShapes(path string, r *safetensors.Reader, c torch.LoRA, base *torch.Model) error {
	rank := int64(c.Rank)
	for _, name := range base.Names() {
		k := baseKey.FindStringSubmatch(name)
		if k == nil || !slices.Contains(c.Targets, k[2]) {
			continue
		}
		p, err := base.Param(name)
		if err != nil {
			return err
		}
		w, err := p.Shape()
		p.Free()
		if err != nil {
			return err
		}
		stem := "base_model.model." + strings.TrimSuffix(name, ".weight")
		for _, m := range []struct {
			key   string
			shape []int64
		}{{stem + ".lora_A.weight", []int64{rank, w[1]}}, {stem + ".lora_B.weight", []int64{w[0], rank}}} {
			info, ok := r.Info(m.key)
			switch {
			case !ok:
				return fmt.Errorf("%s: tensor %s is missing", path, m.key)
			case !slices.Contains([]safetensors.DType{safetensors.F32, safetensors.F16, safetensors.BF16, safetensors.F64}, info.DType):
				return fmt.Errorf("%s: tensor %s is %s, not a float dtype", path, m.key, info.DType)
			case !slices.Equal(info.Shape, m.shape):
				return shapeError(path, m.key, info.Shape, m.shape, c.Rank)
			}
		}
	}
	return nil
}

// loadTensors sets m's adapter parameters (head: its value head's) from r,
// checking that each is there with the shape m expects, and that r holds
// no other.
func loadTensors(m *torch.Model, r *safetensors.Reader, path string, head bool, rank int) error {
	want := map[string]bool{}
	for _, name := range m.Names() {
		if torch.IsValueHead(name) != head {
			continue
		}
		want[name] = true
		info, ok := r.Info(name)
		if !ok {
			return fmt.Errorf("%s: tensor %s is missing", path, name)
		}
		p, err := m.Param(name)
		if err != nil {
			return err
		}
		shape, err := p.Shape()
		p.Free()
		if err != nil {
			return err
		}
		if !slices.Equal(info.Shape, shape) {
			return shapeError(path, name, info.Shape, shape, rank)
		}
		vals, err := r.Float32s(name)
		if err != nil {
			return err
		}
		if i := slices.IndexFunc(vals, notFinite); i >= 0 {
			return fmt.Errorf("%s: tensor %s is not finite: element %d is %v", path, name, i, vals[i])
		}
		t, err := torch.FromFloat32(vals, info.Shape...)
		if err != nil {
			return err
		}
		err = m.SetParam(name, t)
		t.Free()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	for _, n := range r.Names() {
		if !want[n] {
			return fmt.Errorf("%s: unexpected tensor %s", path, n)
		}
	}
	return nil
}

// notFinite reports a NaN or an infinity.
func notFinite(v float32) bool { return v != v || math.IsInf(float64(v), 0) }

// shapeError names how a tensor's shape differs from the one the base and
// the rank give: lora_A is [r, in], lora_B [out, r].
func shapeError(path, name string, got, want []int64, rank int) error {
	rankDim := 0
	if strings.Contains(name, ".lora_B.") {
		rankDim = 1
	}
	if len(got) == 2 && len(want) == 2 && got[rankDim] != want[rankDim] && got[1-rankDim] == want[1-rankDim] {
		return fmt.Errorf("%s: tensor %s has rank %d (shape %v), but adapter_config.json says r = %d", path, name, got[rankDim], got, rank)
	}
	return fmt.Errorf("%s: tensor %s has shape %v, but over the base's projection at rank %d it is %v", path, name, got, rank, want)
}
