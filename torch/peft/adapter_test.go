package peft

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/safetensors"
)

// The base of these tests: 2 layers, hidden 32, 4 heads of 8 (q out 32),
// 2 kv heads of 8 (k and v out 16), intermediate 48.
func baseConfig() torch.Config {
	return torch.Config{ModelType: "qwen2", Vocab: 97, Hidden: 32, Intermediate: 48, Layers: 2, Heads: 4, KVHeads: 2,
		HeadDim: 8, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 64}
}

func newBase(t *testing.T) *torch.Model {
	t.Helper()
	m, err := torch.NewRandomModel(baseConfig(), torch.Float32, torch.CPU, false, 11)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Free)
	return m
}

// adapters is LoRA r=8, alpha 16 on q_proj, v_proj and down_proj.
var adapters = torch.LoRA{Rank: 8, Alpha: 16, Dropout: 0.05, Targets: []string{"q_proj", "v_proj", "down_proj"}}

// newLoRA makes adapters over base whose every matrix (lora_B included,
// which PEFT initialises to zero) holds values drawn from seed, so a round
// trip that lost or swapped one would show.
func newLoRA(t *testing.T, base *torch.Model, valueHead bool, seed uint64) *torch.Model {
	t.Helper()
	m, err := torch.NewLoRAModel(base, adapters, valueHead, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Free)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, name := range m.Names() {
		p, err := m.Param(name)
		if err != nil {
			t.Fatal(err)
		}
		shape, _ := p.Shape()
		p.Free()
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		vals := make([]float32, n)
		for i := range vals {
			vals[i] = float32(rng.NormFloat64())
		}
		setParam(t, m, name, vals, shape)
	}
	return m
}

func setParam(t *testing.T, m *torch.Model, name string, vals []float32, shape []int64) {
	t.Helper()
	x, err := torch.FromFloat32(vals, shape...)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Free()
	if err := m.SetParam(name, x); err != nil {
		t.Fatal(err)
	}
}

func paramBytes(t *testing.T, m *torch.Model, name string) []byte {
	t.Helper()
	p, err := m.Param(name)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Free()
	b, err := p.Bytes(torch.Float32)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Save then Load gives the same adapters (and value head) bit for bit,
// under the same names, with the same LoRA shape.
func TestRoundTrip(t *testing.T) {
	base := newBase(t)
	for _, head := range []bool{false, true} {
		src := newLoRA(t, base, head, 5)
		dir := t.TempDir()
		if err := Save(dir, src, "Qwen/Qwen2.5-0.5B"); err != nil {
			t.Fatal(err)
		}
		_, err := os.Stat(filepath.Join(dir, torch.ValueHeadFile))
		if head != (err == nil) {
			t.Errorf("value head %v: %s present %v", head, torch.ValueHeadFile, err == nil)
		}
		got, err := Load(dir, base, head, 99)
		if err != nil {
			t.Fatal(err)
		}
		defer got.Free()
		if !slices.Equal(got.Names(), src.Names()) {
			t.Fatalf("names %v, want %v", got.Names(), src.Names())
		}
		for _, n := range src.Names() {
			if a, b := paramBytes(t, src, n), paramBytes(t, got, n); !slices.Equal(a, b) {
				t.Errorf("value head %v: %s differs after the round trip", head, n)
			}
		}
		if c := got.LoRA(); c == nil || c.Rank != 8 || c.Alpha != 16 || c.Dropout != 0.05 || !slices.Equal(c.Targets, adapters.Targets) {
			t.Errorf("loaded LoRA %+v, want %+v", c, adapters)
		}
	}
}

// The saved keys are PEFT's, written out here from PEFT's naming
// (get_peft_model_state_dict: the module path under PeftModel's
// base_model.model, with the adapter name "default" removed), with the
// shapes worked from baseConfig: lora_A [r, in], lora_B [out, r].
func TestSavedKeysArePEFTs(t *testing.T) {
	base := newBase(t)
	dir := t.TempDir()
	if err := Save(dir, newLoRA(t, base, false, 5), "Qwen/Qwen2.5-0.5B"); err != nil {
		t.Fatal(err)
	}
	want := map[string][]int64{}
	for _, l := range []string{"0", "1"} {
		p := "base_model.model.model.layers." + l + "."
		want[p+"self_attn.q_proj.lora_A.weight"] = []int64{8, 32}
		want[p+"self_attn.q_proj.lora_B.weight"] = []int64{32, 8}
		want[p+"self_attn.v_proj.lora_A.weight"] = []int64{8, 32}
		want[p+"self_attn.v_proj.lora_B.weight"] = []int64{16, 8}
		want[p+"mlp.down_proj.lora_A.weight"] = []int64{8, 48}
		want[p+"mlp.down_proj.lora_B.weight"] = []int64{32, 8}
	}
	r, err := safetensors.Open(filepath.Join(dir, "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if len(r.Names()) != len(want) {
		t.Errorf("%d tensors %v, want %d", len(r.Names()), r.Names(), len(want))
	}
	for name, shape := range want {
		info, ok := r.Info(name)
		if !ok {
			t.Errorf("no tensor %s", name)
			continue
		}
		if info.DType != safetensors.F32 || !slices.Equal(info.Shape, shape) {
			t.Errorf("%s: %s %v, want F32 %v", name, info.DType, info.Shape, shape)
		}
	}
	var cfg map[string]any
	b, err := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	wantCfg := map[string]any{
		"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": 8.0, "lora_alpha": 16.0, "lora_dropout": 0.05,
		"bias": "none", "fan_in_fan_out": false, "use_rslora": false, "use_dora": false, "inference_mode": true,
		"base_model_name_or_path": "Qwen/Qwen2.5-0.5B", "modules_to_save": nil, "layers_to_transform": nil,
		"target_modules": []any{"q_proj", "v_proj", "down_proj"},
	}
	for k, v := range wantCfg {
		got, ok := cfg[k]
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(v)
		if !ok || string(gb) != string(wb) {
			t.Errorf("adapter_config.json %s = %s (present %v), want %s", k, gb, ok, wb)
		}
	}
}

// peftConfig is adapter_config.json as PEFT 0.13's save_pretrained writes
// it (json.dumps with indent 2 and sorted keys) for
// LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
// task_type="CAUSAL_LM"): target_modules is a set, so its order is any.
const peftConfig = `{
  "alpha_pattern": {},
  "auto_mapping": null,
  "base_model_name_or_path": "Qwen/Qwen2.5-0.5B-Instruct",
  "bias": "none",
  "fan_in_fan_out": false,
  "inference_mode": true,
  "init_lora_weights": true,
  "layer_replication": null,
  "layers_pattern": null,
  "layers_to_transform": null,
  "loftq_config": {},
  "lora_alpha": 8,
  "lora_dropout": 0.0,
  "megatron_config": null,
  "megatron_core": "megatron.core",
  "modules_to_save": null,
  "peft_type": "LORA",
  "r": 4,
  "rank_pattern": {},
  "revision": null,
  "target_modules": [
    "v_proj",
    "q_proj"
  ],
  "task_type": "CAUSAL_LM",
  "use_dora": false,
  "use_rslora": false
}
`

// handTensors are the r=4 adapters of peftConfig on q_proj (out 32) and
// v_proj (out 16) of both layers, each matrix filled with its own
// constant so a misplaced one would show.
func handTensors(t *testing.T) []safetensors.Tensor {
	t.Helper()
	var out []safetensors.Tensor
	k := float32(0)
	for _, l := range []string{"0", "1"} {
		for _, m := range []struct {
			name string
			out  int64
		}{{"q_proj", 32}, {"v_proj", 16}} {
			p := "base_model.model.model.layers." + l + ".self_attn." + m.name
			k++
			out = append(out, filled(t, p+".lora_A.weight", k, 4, 32))
			k++
			out = append(out, filled(t, p+".lora_B.weight", k, m.out, 4))
		}
	}
	return out
}

func filled(t *testing.T, name string, v float32, shape ...int64) safetensors.Tensor {
	t.Helper()
	vals := make([]float32, shape[0]*shape[1])
	for i := range vals {
		vals[i] = v
	}
	st, err := safetensors.FromFloat32s(name, safetensors.F32, shape, vals)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func writeFolder(t *testing.T, config string, tensors []safetensors.Tensor) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "adapter_config.json"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if tensors != nil {
		if err := safetensors.Write(filepath.Join(dir, "adapter_model.safetensors"), tensors, map[string]string{"format": "pt"}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A folder as PEFT writes it loads: the config's shape, each tensor's
// values in its place.
func TestLoadPEFTWrittenFolder(t *testing.T) {
	base := newBase(t)
	ts := handTensors(t)
	m, err := Load(writeFolder(t, peftConfig, ts), base, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if c := m.LoRA(); c.Rank != 4 || c.Alpha != 8 || c.Dropout != 0 || !slices.Equal(c.Targets, []string{"q_proj", "v_proj"}) {
		t.Errorf("LoRA %+v, want r 4, alpha 8, dropout 0 on q_proj, v_proj", c)
	}
	for _, st := range ts {
		if got := paramBytes(t, m, st.Name); !slices.Equal(got, st.Data) {
			t.Errorf("%s does not hold the file's values", st.Name)
		}
	}
	c, err := ReadConfig(writeFolder(t, peftConfig, nil))
	if err != nil || c.Base != "Qwen/Qwen2.5-0.5B-Instruct" {
		t.Errorf("ReadConfig: base %q, %v", c.Base, err)
	}
}

// use_rslora is read (and written back) as RSLoRA, whose scale is
// alpha/sqrt(r): 8/sqrt(4) = 4 where plain LoRA's is 8/4 = 2; target
// modules named by their paths on every layer, as PEFT writes all-linear,
// read as the module names.
func TestReadConfigRSLoRAAndPaths(t *testing.T) {
	cfg := strings.Replace(peftConfig, `"use_rslora": false`, `"use_rslora": true`, 1)
	cfg = strings.Replace(cfg, `"v_proj",
    "q_proj"`, `"model.layers.1.mlp.down_proj", "model.layers.0.self_attn.q_proj", "model.layers.0.mlp.down_proj", "model.layers.1.self_attn.q_proj"`, 1)
	c, err := ReadConfig(writeFolder(t, cfg, nil))
	if err != nil {
		t.Fatal(err)
	}
	if !c.LoRA.RSLoRA || c.LoRA.Scale() != 4 || !slices.Equal(c.LoRA.Targets, []string{"q_proj", "down_proj"}) {
		t.Fatalf("LoRA %+v (scale %v), want RSLoRA, scale 4, targets q_proj, down_proj", c.LoRA, c.LoRA.Scale())
	}
	if plain := (torch.LoRA{Rank: 4, Alpha: 8}); plain.Scale() != 2 {
		t.Fatalf("plain LoRA's scale %v, want 2", plain.Scale())
	}
	base := newBase(t)
	m, err := torch.NewLoRAModel(base, c.LoRA, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	dir := t.TempDir()
	if err := Save(dir, m, "base"); err != nil {
		t.Fatal(err)
	}
	back, err := ReadConfig(dir)
	if err != nil || !back.LoRA.RSLoRA {
		t.Fatalf("saved and read back: %+v, %v; want use_rslora kept", back.LoRA, err)
	}
}

// Each way a folder can disagree with the base or with itself is refused,
// the error naming what differs (Gemma 4's per-layer input projections
// included, on a base that has none).
func TestLoadRefusesMismatch(t *testing.T) {
	base := newBase(t)
	replace := func(ts []safetensors.Tensor, name string, with safetensors.Tensor) []safetensors.Tensor {
		out := slices.Clone(ts)
		for i := range out {
			if out[i].Name == name {
				out[i] = with
			}
		}
		return out
	}
	qA := "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"
	plmA := "base_model.model.model.per_layer_model_projection.lora_A.weight"
	ts := handTensors(t)
	cases := []struct {
		name    string
		config  string
		tensors []safetensors.Tensor
		want    []string
	}{
		{"target the base lacks", strings.Replace(peftConfig, `"q_proj"`, `"c_attn"`, 1), ts, []string{`target module "c_attn"`, "no such projection"}},
		{"layer beyond the base", peftConfig, append(slices.Clone(ts),
			filled(t, "base_model.model.model.layers.2.self_attn.q_proj.lora_A.weight", 1, 4, 32)), []string{"layer 2", "the base has 2 layers"}},
		{"shape against the projection", peftConfig, replace(ts, qA, filled(t, qA, 1, 4, 48)), []string{qA, "shape [4 48]", "[4 32]"}},
		{"missing key", peftConfig, ts[1:], []string{qA, "missing"}},
		{"extra key", peftConfig, append(slices.Clone(ts), filled(t, "base_model.model.lm_head.lora_A.weight", 1, 4, 32)), []string{"unexpected tensor base_model.model.lm_head.lora_A.weight"}},
		{"module not in target_modules", peftConfig, append(slices.Clone(ts),
			filled(t, "base_model.model.model.layers.0.self_attn.k_proj.lora_A.weight", 1, 4, 32)), []string{"k_proj", "target_modules (q_proj, v_proj) does not list"}},
		{"rank against the tensors", strings.Replace(peftConfig, `"r": 4`, `"r": 2`, 1), ts, []string{"has rank 4", "r = 2"}},
		{"adapter name in a key", peftConfig, replace(ts, qA, filled(t, "base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight", 1, 4, 32)), []string{"adapter name (default)"}},
		{"not LoRA", strings.Replace(peftConfig, `"LORA"`, `"IA3"`, 1), ts, []string{`peft_type "IA3"`}},
		{"DoRA", strings.Replace(peftConfig, `"use_dora": false`, `"use_dora": true`, 1), ts, []string{"use_dora"}},
		{"lora_bias", strings.Replace(peftConfig, `"bias": "none",`, `"bias": "none", "lora_bias": true,`, 1), ts, []string{"lora_bias true"}},
		{"layer_replication", strings.Replace(peftConfig, `"layer_replication": null`, `"layer_replication": [[0, 2], [1, 2]]`, 1), ts, []string{"layer_replication [[0, 2], [1, 2]]"}},
		{"aLoRA", strings.Replace(peftConfig, `"bias": "none",`, `"bias": "none", "alora_invocation_tokens": [5, 6],`, 1), ts, []string{"alora_invocation_tokens [5, 6]"}},
		{"PiSSA", strings.Replace(peftConfig, `"init_lora_weights": true`, `"init_lora_weights": "pissa"`, 1), ts, []string{`init_lora_weights "pissa"`}},
		{"targets on a subset of layers", strings.Replace(peftConfig, `"v_proj",
    "q_proj"`, `"model.layers.1.self_attn.v_proj", "model.layers.1.self_attn.q_proj"`, 1), ts, []string{"q_proj on layers [1] only"}},
		{"target path in the wrong block", strings.Replace(peftConfig, `"v_proj",
    "q_proj"`, `"model.layers.0.mlp.q_proj"`, 1), ts, []string{`"model.layers.0.mlp.q_proj"`, "no q_proj in mlp"}},
		{"model-level adapter not listed", peftConfig, append(slices.Clone(ts), filled(t, plmA, 1, 4, 32)),
			[]string{plmA, "target_modules (q_proj, v_proj) does not list"}},
		{"model-level adapter on a base without it", strings.Replace(peftConfig, `"v_proj",`, `"v_proj", "per_layer_model_projection",`, 1),
			append(slices.Clone(ts), filled(t, plmA, 1, 4, 32)), []string{plmA, "the base does not have"}},
		{"model-level key of another module", peftConfig, append(slices.Clone(ts), filled(t, "base_model.model.model.embed_tokens.lora_A.weight", 1, 4, 32)),
			[]string{"unexpected tensor base_model.model.model.embed_tokens.lora_A.weight"}},
		{"per-layer gate on a base without it", strings.Replace(peftConfig, `"v_proj",`, `"v_proj", "per_layer_input_gate",`, 1),
			append(slices.Clone(ts), filled(t, "base_model.model.model.layers.0.per_layer_input_gate.lora_A.weight", 1, 4, 32)),
			[]string{"per_layer_input_gate"}},
	}
	for _, k := range cases {
		t.Run(k.name, func(t *testing.T) {
			m, err := Load(writeFolder(t, k.config, k.tensors), base, false, 1)
			if err == nil {
				m.Free()
				t.Fatalf("loaded; want an error naming %q", k.want)
			}
			for _, w := range k.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	// A folder with only the pickled adapter_model.bin is refused, saying so.
	dir := writeFolder(t, peftConfig, nil)
	if err := os.WriteFile(filepath.Join(dir, "adapter_model.bin"), []byte("pickle"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, base, false, 1); err == nil || !strings.Contains(err.Error(), "adapter_model.bin") || !strings.Contains(err.Error(), "pickle") {
		t.Errorf("a .bin folder: %v, want a refusal naming adapter_model.bin", err)
	}
}

// hybridConfig is a small Qwen3.5 text model: Gated DeltaNet layers 0-2
// (in_proj_qkv [64, 32]: 2 key heads of 8 for q and k, 4 value heads of
// 8), a gated attention layer 3 (q_proj [128, 32]: 4 heads of 16, query
// and gate), hidden 32, intermediate 48.
func hybridConfig() torch.Config {
	return torch.Config{ModelType: "qwen3_5_text", Vocab: 101, Hidden: 32, Intermediate: 48, Layers: 4, Heads: 4, KVHeads: 2,
		HeadDim: 16, RMSEps: 1e-6, RopeTheta: 1e7, MaxPositions: 256, PartialRotary: 0.25, TorchDType: "float32",
		LayerTypes:     []string{torch.LinearAttention, torch.LinearAttention, torch.LinearAttention, torch.FullAttention},
		LinearKeyHeads: 2, LinearValueHeads: 4, LinearKeyDim: 8, LinearValueDim: 8, LinearConvKernel: 4}
}

// hybridTensors are adapters of r 4 on in_proj_qkv (layers 0-2) and
// q_proj (layer 3) of hybridConfig, as PEFT saves them.
func hybridTensors(t *testing.T) []safetensors.Tensor {
	t.Helper()
	var out []safetensors.Tensor
	for l, m := range []struct {
		module string
		out    int64
	}{{"linear_attn.in_proj_qkv", 64}, {"linear_attn.in_proj_qkv", 64}, {"linear_attn.in_proj_qkv", 64}, {"self_attn.q_proj", 128}} {
		p := "base_model.model.model.layers." + string(rune('0'+l)) + "." + m.module
		out = append(out, filled(t, p+".lora_A.weight", float32(l+1), 4, 32), filled(t, p+".lora_B.weight", float32(-l-1), m.out, 4))
	}
	return out
}

// Over a Qwen3.5, an adapter's targets sit on the layers that have them:
// PEFT's all-linear written as module paths names in_proj_qkv on the
// DeltaNet layers 0-2 and q_proj on the attention layer 3, which loads,
// each tensor in its place, and round-trips through Save; target_modules
// "all-linear" is the base's twelve projections. Refused, naming why: a
// path on a layer without the projection, a DeltaNet target on some of
// its layers only, a tensor on a layer without its projection, and a
// DeltaNet adapter over a model without DeltaNet layers (a Qwen2).
func TestLoadQwen35Adapters(t *testing.T) {
	base, err := torch.NewRandomModel(hybridConfig(), torch.Float32, torch.CPU, false, 11)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Free()
	paths := func(p ...string) string {
		q, _ := json.Marshal(p)
		return strings.Replace(peftConfig, `[
    "v_proj",
    "q_proj"
  ]`, string(q), 1)
	}
	written := paths("model.layers.3.self_attn.q_proj", "model.layers.0.linear_attn.in_proj_qkv",
		"model.layers.2.linear_attn.in_proj_qkv", "model.layers.1.linear_attn.in_proj_qkv")
	ts := hybridTensors(t)
	m, err := Load(writeFolder(t, written, ts), base, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if c := m.LoRA(); !slices.Equal(c.Targets, []string{"q_proj", "in_proj_qkv"}) {
		t.Errorf("targets %v, want q_proj, in_proj_qkv", c.Targets)
	}
	var names []string
	for _, st := range ts {
		names = append(names, st.Name)
		if got := paramBytes(t, m, st.Name); !slices.Equal(got, st.Data) {
			t.Errorf("%s does not hold the file's values", st.Name)
		}
	}
	if !slices.Equal(m.Names(), names) {
		t.Errorf("names %v, want %v", m.Names(), names)
	}
	dir := t.TempDir()
	if err := Save(dir, m, "base"); err != nil {
		t.Fatal(err)
	}
	back, err := Load(dir, base, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Free()
	for _, n := range names {
		if !slices.Equal(paramBytes(t, back, n), paramBytes(t, m, n)) {
			t.Errorf("%s differs after Save and Load", n)
		}
	}
	c, err := ReadConfig(writeFolder(t, strings.Replace(peftConfig, `[
    "v_proj",
    "q_proj"
  ]`, `"all-linear"`, 1), nil))
	if err != nil {
		t.Fatal(err)
	}
	if l, err := c.Over(base.Config); err != nil || len(l.Targets) != 12 {
		t.Errorf("all-linear over a Qwen3.5: %v, %v", l.Targets, err)
	}
	if l, err := c.Over(baseConfig()); err != nil || len(l.Targets) != 7 || slices.Contains(l.Targets, "in_proj_qkv") {
		t.Errorf("all-linear over a Qwen2: %v, %v", l.Targets, err)
	}
	qwen2 := newBase(t)
	for _, k := range []struct {
		name    string
		base    *torch.Model
		config  string
		tensors []safetensors.Tensor
		want    string
	}{
		{"path on a layer without it", base, paths("model.layers.3.linear_attn.in_proj_qkv", "model.layers.0.linear_attn.in_proj_qkv"), ts,
			"in_proj_qkv on layer 3, which has no linear_attn.in_proj_qkv"},
		{"deltanet target on some layers", base, paths("model.layers.0.linear_attn.in_proj_qkv", "model.layers.3.self_attn.q_proj"), ts,
			"in_proj_qkv on layers [0] only, the base has it on [0 1 2]"},
		{"tensor on a layer without it", base, paths("in_proj_qkv", "q_proj"), append(slices.Clone(ts),
			filled(t, "base_model.model.model.layers.3.linear_attn.in_proj_qkv.lora_A.weight", 1, 4, 32)),
			"is on layer 3, which has no linear_attn.in_proj_qkv"},
		{"deltanet adapter over a qwen2", qwen2, paths("in_proj_qkv"), ts[:2],
			"is on layer 0, which has no linear_attn.in_proj_qkv"},
		{"path in the wrong block", base, paths("model.layers.0.self_attn.in_proj_qkv"), ts, "no in_proj_qkv in self_attn"},
	} {
		t.Run(k.name, func(t *testing.T) {
			m, err := Load(writeFolder(t, k.config, k.tensors), k.base, false, 1)
			if err == nil {
				m.Free()
				t.Fatalf("loaded; want an error naming %q", k.want)
			}
			if !strings.Contains(err.Error(), k.want) {
				t.Errorf("error %q does not name %q", err, k.want)
			}
		})
	}
}
