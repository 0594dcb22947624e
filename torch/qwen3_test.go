package torch

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// qwen3Config is a tiny Qwen3 that the decode kernels support: per-head
// q/k norms, no q/k/v biases, and head_dim 32, which is not hidden / heads
// (40 / 4), so q_proj is [128, 40] and o_proj [40, 128].
func qwen3Config() Config {
	c := kernelConfig()
	c.ModelType, c.HeadDim = "qwen3", 32
	return c
}

// spreadQKNorms gives the q_norm and k_norm weights (1 when drawn) values
// between 0.7 and 1.3, so that the tests see whether a path scales each
// head by them. A model without them (Qwen2, Llama) is left as it is.
func spreadQKNorms(t *testing.T, m *Model) {
	t.Helper()
	editParams(t, m, []string{"q_norm.weight", "k_norm.weight"}, func(k int, vals []float32) {
		for i := range vals {
			vals[i] = float32(1 + 0.3*math.Sin(float64(5*k+3*i)))
		}
	})
}

// The Qwen3 fixture ($AGENTRL_QWEN3_FIXTURE, or the shared qwen3-tiny-a: a
// random Qwen3ForCausalLM with head_dim 32 where hidden / heads is 16, and
// q/k norm weights spread wide enough that their place before RoPE
// shows): logits, training-forward logprobs and greedy decoding on every
// decode path within 1e-4 of its float64 reference (see fixtureParity).
func TestQwen3FixtureParity(t *testing.T) {
	dir := fixtureDir(t, "AGENTRL_QWEN3_FIXTURE", "qwen3-tiny-a")
	cfg, err := ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ModelType != "qwen3" || cfg.HeadDim == cfg.Hidden/cfg.Heads {
		t.Fatalf("%s: model_type %q, head_dim %d, hidden/heads %d: not the Qwen3 fixture this test is about",
			dir, cfg.ModelType, cfg.HeadDim, cfg.Hidden/cfg.Heads)
	}
	fixtureParity(t, dir)
}

// A Qwen3 model has the q/k norm weights, one [head_dim] each per layer,
// and no q/k/v biases; Qwen2 has the biases and no norms.
func TestQwen3Parameters(t *testing.T) {
	m, err := NewModel(qwen3Config(), Float32, CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	names := m.Names()
	for _, n := range []string{"model.layers.0.self_attn.q_norm.weight", "model.layers.1.self_attn.k_norm.weight"} {
		if !slices.Contains(names, n) {
			t.Fatalf("qwen3 model lacks %s: %v", n, names)
		}
		p, _ := m.Param(n)
		shape, _ := p.Shape()
		p.Free()
		if !slices.Equal(shape, []int64{32}) {
			t.Errorf("%s has shape %v, want [head_dim] = [32]", n, shape)
		}
	}
	q, _ := m.Param("model.layers.0.self_attn.q_proj.weight")
	shape, _ := q.Shape()
	q.Free()
	if !slices.Equal(shape, []int64{4 * 32, 40}) {
		t.Errorf("q_proj has shape %v, want [heads*head_dim, hidden] = [128 40]", shape)
	}
	for _, n := range names {
		if strings.HasSuffix(n, ".bias") {
			t.Errorf("qwen3 model has a bias %s", n)
		}
	}
	q2, _ := NewModel(kernelConfig(), Float32, CPU, false)
	defer q2.Free()
	for _, n := range q2.Names() {
		if strings.Contains(n, "_norm.") {
			t.Errorf("qwen2 model has %s", n)
		}
	}
}

// config.json of a Qwen3: head_dim is read as written (not hidden/heads),
// defaults to 128 as in transformers' Qwen3Config when absent, and
// attention_bias true (biases on o_proj as well) is refused by name.
func TestQwen3Config(t *testing.T) {
	base := `"model_type":"qwen3","vocab_size":8,"hidden_size":64,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":4,"num_key_value_heads":2`
	c, err := ParseConfig([]byte(`{`+base+`,"head_dim":32}`), "config.json")
	if err != nil || c.HeadDim != 32 || !c.QKNorm() || c.QKVBias() {
		t.Fatalf("head_dim 32: %+v, %v", c, err)
	}
	if c, err := ParseConfig([]byte(`{`+base+`}`), "config.json"); err != nil || c.HeadDim != 128 {
		t.Fatalf("no head_dim: %d, %v; want Qwen3Config's default 128", c.HeadDim, err)
	}
	if _, err := ParseConfig([]byte(`{`+base+`,"attention_bias":true}`), "config.json"); err == nil || !strings.Contains(err.Error(), "attention_bias") {
		t.Fatalf("attention_bias true: %v", err)
	}
}

// Save -> load of a Qwen3 is bit-identical and writes a config.json that
// transformers reads as a Qwen3 (model_type, architectures, head_dim,
// attention_bias), keeping the keys it was read with: the fixture is
// loaded, saved and loaded again, and gives the same logits.
func TestQwen3SaveLoadRoundTrip(t *testing.T) {
	src := fixtureDir(t, "AGENTRL_QWEN3_FIXTURE", "qwen3-tiny-a")
	m, err := LoadModel(src, Float32, CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	spreadQKNorms(t, m) // not the fixture's values: the saved ones must come back
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"model_type": "qwen3", "head_dim": 32.0, "attention_bias": false, "hidden_size": 64.0,
		"num_attention_heads": 4.0, "rope_theta": 1e6, "max_window_layers": 2.0, "use_sliding_window": false}
	for k, v := range want {
		if raw[k] != v {
			t.Errorf("saved config.json has %s = %v, want %v", k, raw[k], v)
		}
	}
	if arch, _ := raw["architectures"].([]any); len(arch) != 1 || arch[0] != "Qwen3ForCausalLM" {
		t.Errorf("saved config.json has architectures %v", raw["architectures"])
	}
	back, err := LoadModel(dir, Float32, CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Free()
	if back.Config.ModelType != "qwen3" || back.Config.HeadDim != 32 {
		t.Fatalf("reloaded config: model_type %q, head_dim %d", back.Config.ModelType, back.Config.HeadDim)
	}
	if !slices.Equal(back.Names(), m.Names()) {
		t.Fatalf("reloaded names %v, saved %v", back.Names(), m.Names())
	}
	sameWeights(t, m, back)
	ids := seq(11, 4)
	if d := maxDiff32(fullLogits(t, back, ids), fullLogits(t, m, ids)); d != 0 {
		t.Fatalf("reloaded model's logits differ by %g", d)
	}
}
