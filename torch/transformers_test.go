package torch

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
	"github.com/agentrl/agentrl/torch/safetensors"
)

// pythonModels makes, for each spec of the list on stdin, a model of
// transformers' own classes from a transformers 5 style config (random
// weights: N(0, 0.3), norms 1 + N(0, 0.1)), saves it with save_pretrained
// in float32, and writes its float64 logits over the spec's ids to
// logits.json beside it.
const pythonModels = `
import json, sys, torch
from transformers import AutoConfig, AutoModelForCausalLM
for s in json.load(sys.stdin):
    torch.manual_seed(s["seed"])
    cfg = AutoConfig.for_model(**s["config"])
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager", dtype=torch.float32)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1 + 0.1 * torch.randn_like(p))
            else:
                p.copy_(0.3 * torch.randn_like(p))
    model.save_pretrained(s["dir"])
    model = model.double().eval()
    with torch.no_grad():
        logits = model(torch.tensor([s["ids"]])).logits[0]
    json.dump(logits.tolist(), open(s["dir"] + "/logits.json", "w"))
`

// transformersModel is one model made by transformers for
// TestInteropLogitsRoPETypes, and the config agentrl computed with before
// this package read transformers 5's configs and RoPE scaling (plain RoPE,
// rope_theta 10000 unless at the top level): its logits must be far off.
type transformersModel struct {
	name   string
	config map[string]any
	old    func(Config) Config
}

// The logits of models that transformers 5 made and saved (its config
// style: rope_parameters, dtype) equal transformers' float64 forward
// within 5e-5 when loaded in float64 and 1e-4 in float32 (logits of size
// 10 here; transformers' "float64" forward computes its RMSNorms and
// cos/sin in float32), for a Qwen2 with
// rope_theta 1e6, a Qwen3 whose head_dim (32) is not hidden/heads, a
// tied Llama with Llama 3.2's llama3 scaling, a Llama with llama3
// scaling over a short original context, a Qwen2 with yarn (attention
// factor 1.139 on cos and sin) and a Llama with linear scaling; the Llama
// 3.2 folder rewritten in the transformers 4 style (rope_theta and
// rope_scaling at the top level, torch_dtype) gives the same logits. The
// config read as before (plain RoPE, theta 10000) is off by far more than
// the tolerance on each (about 10), and so is the right theta without the
// scaling, so these fail on the code that ignored rope_parameters. Skips without the Python environment.
func TestInteropLogitsRoPETypes(t *testing.T) {
	py := pyinterop.Python(t)
	shape := func(mt string, extra map[string]any) map[string]any {
		c := map[string]any{"model_type": mt, "vocab_size": 128, "hidden_size": 64, "intermediate_size": 96,
			"num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "rms_norm_eps": 1e-6,
			"max_position_embeddings": 256, "bos_token_id": 1, "eos_token_id": 2}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	plain := func(theta float64) func(Config) Config {
		return func(c Config) Config { c.Rope, c.RopeTheta = RoPE{}, theta; return c }
	}
	llama32 := map[string]any{"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0,
		"high_freq_factor": 4.0, "original_max_position_embeddings": 8192}
	models := []transformersModel{
		{"qwen2 theta 1e6", shape("qwen2", map[string]any{"rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 1e6}}), plain(10000)},
		{"qwen3 head_dim 32", shape("qwen3", map[string]any{"head_dim": 32, "rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 1e6}}), plain(10000)},
		{"llama 3.2", shape("llama", map[string]any{"tie_word_embeddings": true, "max_position_embeddings": 131072,
			"eos_token_id": []int{128001, 128008, 128009}, "vocab_size": 128, "rope_parameters": llama32}), plain(10000)},
		{"llama3 short context", shape("llama", map[string]any{"rope_parameters": map[string]any{"rope_type": "llama3", "rope_theta": 10000.0,
			"factor": 4.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 32}}), plain(10000)},
		{"qwen2 yarn", shape("qwen2", map[string]any{"max_position_embeddings": 128, "rope_parameters": map[string]any{"rope_type": "yarn",
			"rope_theta": 10000.0, "factor": 4.0, "original_max_position_embeddings": 32}}), plain(10000)},
		{"llama linear", shape("llama", map[string]any{"rope_parameters": map[string]any{"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}}), plain(10000)},
	}
	ids := seq(24, 5)
	root := t.TempDir()
	var specs []map[string]any
	for i, m := range models {
		specs = append(specs, map[string]any{"dir": filepath.Join(root, strings.ReplaceAll(m.name, " ", "-")), "config": m.config, "ids": ids, "seed": i})
	}
	in, _ := json.Marshal(specs)
	cmd := exec.Command(py, "-c", pythonModels)
	cmd.Stdin = strings.NewReader(string(in))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("transformers: %v\n%s", err, out)
	}
	for i, m := range models {
		dir := specs[i]["dir"].(string)
		t.Run(m.name, func(t *testing.T) {
			var want [][]float64
			b, err := os.ReadFile(filepath.Join(dir, "logits.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			cfg, err := ReadConfig(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				dt  DType
				tol float64
			}{{Float64, 5e-5}, {Float32, 1e-4}} {
				if d := logitsDiff(t, dir, cfg, c.dt, ids, want); d > c.tol {
					t.Errorf("%v: logits differ from transformers' by %g (tolerance %g)", c.dt, d, c.tol)
				}
			}
			if cfg.Rope.Type != "" {
				unscaled := cfg
				unscaled.Rope = RoPE{}
				if d := logitsDiff(t, dir, unscaled, Float64, ids, want); d < 1e-3 {
					t.Errorf("without the %s scaling, the logits differ by only %g: the test cannot tell", cfg.Rope.Type, d)
				}
			}
			if d := logitsDiff(t, dir, m.old(cfg), Float64, ids, want); d < 1e-3 {
				t.Errorf("read as before (plain RoPE, theta 10000), the logits differ by only %g: the test cannot tell", d)
			}
			if m.name == "llama 3.2" {
				four := transformers4Style(t, dir)
				cfg4, err := ReadConfig(four)
				if err != nil {
					t.Fatal(err)
				}
				if cfg4.Rope != cfg.Rope || cfg4.RopeTheta != cfg.RopeTheta || !cfg4.TieEmbeddings {
					t.Errorf("transformers 4 style: rope %+v theta %g tied %v, transformers 5 style %+v %g",
						cfg4.Rope, cfg4.RopeTheta, cfg4.TieEmbeddings, cfg.Rope, cfg.RopeTheta)
				}
				if d := logitsDiff(t, four, cfg4, Float64, ids, want); d > 5e-5 {
					t.Errorf("transformers 4 style: logits differ from transformers' by %g", d)
				}
			}
		})
	}
}

// logitsDiff loads dir's weights into a model of cfg in dt and returns
// the largest difference of its logits over ids from want.
func logitsDiff(t *testing.T, dir string, cfg Config, dt DType, ids []int64, want [][]float64) float64 {
	t.Helper()
	m, err := NewModel(cfg, dt, CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	r, err := safetensors.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	shapes, err := m.ParamShapes()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkWeights(r, dir, cfg, false); err != nil {
		t.Fatal(err)
	}
	if err := m.loadFrom(r, shapes, false); err != nil {
		t.Fatal(err)
	}
	T := len(ids)
	pos, attn := make([]int64, T), make([]int64, T)
	for i := range pos {
		pos[i], attn[i] = int64(i), 1
	}
	lt, err := m.Logits(Batch{B: 1, T: T, IDs: ids, Attn: attn, Positions: pos})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Free()
	got, err := lt.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	var d float64
	V := cfg.Vocab
	for i := range want {
		for k, w := range want[i] {
			d = math.Max(d, math.Abs(got[i*V+k]-w))
		}
	}
	return d
}

// transformers4Style copies the model folder dir with its config.json
// rewritten as transformers 4 wrote it: rope_theta at the top level,
// rope_scaling with the other RoPE keys, torch_dtype for dtype.
func transformers4Style(t *testing.T, dir string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "transformers4")
	if err := os.CopyFS(out, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	rope := c["rope_parameters"].(map[string]any)
	c["rope_theta"] = rope["rope_theta"]
	delete(rope, "rope_theta")
	c["rope_scaling"] = rope
	delete(c, "rope_parameters")
	if d, ok := c["dtype"]; ok {
		c["torch_dtype"] = d
		delete(c, "dtype")
	}
	b, _ = json.Marshal(c)
	if err := os.WriteFile(filepath.Join(out, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}
