package peft

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/safetensors"
)

// peftJob is one folder for testdata/interop/peft_adapters.py (see it for
// the fields).
type peftJob struct {
	Base    string         `json:"base"`
	Adapter string         `json:"adapter"`
	Make    map[string]any `json:"make,omitempty"`
	Seed    int            `json:"seed"`
	Logits  bool           `json:"logits"`
	Grads   string         `json:"grads,omitempty"`
}

// peftAnswer is what the script returns per job.
type peftAnswer struct {
	Logits        [][]float64    `json:"logits"`
	BaseLogits    [][]float64    `json:"base_logits"`
	AdapterConfig map[string]any `json:"adapter_config"`
	Loss          float64        `json:"loss"`
}

// interopBase is a Qwen2 (q/k/v biases) whose head_dim 16 and 2 kv heads
// give every projection its own shape, saved as a Hugging Face folder
// that transformers loads.
func interopBase(t *testing.T, hidden int, seed uint64) (*torch.Model, string) {
	t.Helper()
	cfg := torch.Config{ModelType: "qwen2", Vocab: 101, Hidden: hidden, Intermediate: 96, Layers: 2, Heads: 4, KVHeads: 2,
		HeadDim: 16, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 64, TorchDType: "float32"}
	m, err := torch.NewRandomModel(cfg, torch.Float32, torch.CPU, false, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Free)
	dir := filepath.Join(t.TempDir(), "base")
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	return m, dir
}

// logitsOf is m's logits of ids, one row.
func logitsOf(t *testing.T, m *torch.Model, ids []int64) []float32 {
	t.Helper()
	attn, pos := make([]int64, len(ids)), make([]int64, len(ids))
	for i := range ids {
		attn[i], pos[i] = 1, int64(i)
	}
	x, err := m.Logits(torch.Batch{B: 1, T: len(ids), IDs: ids, Attn: attn, Positions: pos})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Free()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// compare is the largest gap between agentrl's logits and PEFT's, and
// the largest gap between PEFT's adapted logits and its base's (so that a
// test sees the adapters do something).
func compare(got []float32, a peftAnswer) (diff, moved float64) {
	V := len(a.Logits[0])
	for p, row := range a.Logits {
		for v, x := range row {
			diff = math.Max(diff, math.Abs(float64(got[p*V+v])-x))
			moved = math.Max(moved, math.Abs(x-a.BaseLogits[p][v]))
		}
	}
	return diff, moved
}

// Adapters through Hugging Face PEFT, both ways, against PEFT's float64
// forward within 1e-4:
//   - agentrl's adapter folder (peft.Save) loads with
//     PeftModel.from_pretrained, and its logits are agentrl's;
//   - adapters made by PEFT (LoraConfig: target_modules as a list and as
//     all-linear, r, lora_alpha, lora_dropout, use_rslora; every matrix
//     drawn) load in agentrl with PEFT's logits;
//   - folders that do not fit are refused, naming why: PEFT's adapters of
//     a base of another width, a target agentrl has no adapter for
//     (lm_head), a subset of layers, LoRA variants (lora_bias, DoRA, PiSSA's
//     changed base), and r edited against the tensors.
func TestInteropPEFT(t *testing.T) {
	pyinterop.Python(t)
	base, baseDir := interopBase(t, 48, 3)
	_, otherDir := interopBase(t, 64, 4)
	ids := []int64{5, 17, 3, 99, 42, 8, 61, 23, 7}
	root := t.TempDir()

	ours, err := torch.NewLoRAModel(base, torch.LoRA{Rank: 4, Alpha: 8, Dropout: 0.05, Targets: base.Config.AllLinear()}, false, 9)
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Free()
	drawAdapters(t, ours, 9)
	oursDir := filepath.Join(root, "agentrl")
	if err := Save(oursDir, ours, baseDir); err != nil {
		t.Fatal(err)
	}

	loadable := []struct {
		name string
		make map[string]any
	}{
		{"peft q,k,v,o r=4 alpha=16 dropout=0.1", map[string]any{"target_modules": []string{"q_proj", "k_proj", "v_proj", "o_proj"}, "r": 4, "lora_alpha": 16, "lora_dropout": 0.1}},
		{"peft all-linear r=8 alpha=8", map[string]any{"target_modules": "all-linear", "r": 8, "lora_alpha": 8}},
		{"peft rslora mlp r=4 alpha=8", map[string]any{"target_modules": []string{"gate_proj", "up_proj", "down_proj"}, "r": 4, "lora_alpha": 8, "use_rslora": true}},
	}
	refused := []struct {
		name string
		base string
		make map[string]any
		want []string
	}{
		{"peft over a base of width 64", otherDir, map[string]any{"target_modules": []string{"q_proj", "v_proj"}, "r": 4, "lora_alpha": 8}, []string{"q_proj.lora_A.weight", "shape [4 64]", "[4 48]"}},
		{"peft with lm_head", baseDir, map[string]any{"target_modules": []string{"q_proj", "lm_head"}, "r": 4, "lora_alpha": 8}, []string{`target module "lm_head"`}},
		{"peft on layer 1 only", baseDir, map[string]any{"target_modules": []string{"q_proj"}, "r": 4, "lora_alpha": 8, "layers_to_transform": []int{1}}, []string{"layers_to_transform"}},
		{"peft all-linear but one module", baseDir, map[string]any{"target_modules": "all-linear", "r": 4, "lora_alpha": 8, "exclude_modules": []string{"model.layers.1.self_attn.q_proj"}}, []string{"exclude_modules"}},
		{"peft lora_bias", baseDir, map[string]any{"target_modules": []string{"q_proj"}, "r": 4, "lora_alpha": 8, "lora_bias": true}, []string{"lora_bias true"}},
		{"peft DoRA", baseDir, map[string]any{"target_modules": []string{"q_proj"}, "r": 4, "lora_alpha": 8, "use_dora": true}, []string{"use_dora"}},
		{"peft PiSSA", baseDir, map[string]any{"target_modules": []string{"q_proj"}, "r": 4, "lora_alpha": 8, "init_lora_weights": "pissa"}, []string{`init_lora_weights "pissa"`}},
	}
	jobs := []peftJob{{Base: baseDir, Adapter: oursDir, Logits: true}}
	for i, c := range loadable {
		jobs = append(jobs, peftJob{Base: baseDir, Adapter: filepath.Join(root, "load", c.name), Make: c.make, Seed: 20 + i, Logits: true})
	}
	for i, c := range refused {
		jobs = append(jobs, peftJob{Base: c.base, Adapter: filepath.Join(root, "refuse", c.name), Make: c.make, Seed: 30 + i})
	}
	var ans struct {
		Jobs []peftAnswer `json:"jobs"`
		PEFT string       `json:"peft"`
	}
	pyinterop.Run(t, "testdata/interop/peft_adapters.py", map[string]any{"ids": ids, "jobs": jobs}, &ans)
	t.Logf("PEFT %s", ans.PEFT)

	t.Run("agentrl to PEFT", func(t *testing.T) {
		d, moved := compare(logitsOf(t, ours, ids), ans.Jobs[0])
		t.Logf("| agentrl adapter (all 7 targets, r=4) | PeftModel.from_pretrained | logits | %.1e |", d)
		if d > 1e-4 || moved < 1e-2 {
			t.Fatalf("PEFT's logits of agentrl's adapter differ from agentrl's by %g (the adapters move PEFT's by %g)", d, moved)
		}
	})
	for i, c := range loadable {
		t.Run(c.name, func(t *testing.T) {
			a := ans.Jobs[1+i]
			m, err := Load(jobs[1+i].Adapter, base, false, 0)
			if err != nil {
				t.Fatalf("agentrl refuses PEFT's adapter (config %v): %v", a.AdapterConfig, err)
			}
			defer m.Free()
			if rs, _ := a.AdapterConfig["use_rslora"].(bool); rs != m.LoRA().RSLoRA {
				t.Fatalf("use_rslora %v read as %v", rs, m.LoRA().RSLoRA)
			}
			d, moved := compare(logitsOf(t, m, ids), a)
			t.Logf("| %s | peft.Load | logits | %.1e |", c.name, d)
			if d > 1e-4 || moved < 1e-2 {
				t.Fatalf("agentrl's logits of PEFT's adapter differ from PEFT's by %g (the adapters move PEFT's by %g)", d, moved)
			}
		})
	}
	for i, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			dir := jobs[1+len(loadable)+i].Adapter
			m, err := Load(dir, base, false, 0)
			if err == nil {
				m.Free()
				t.Fatalf("loaded; want an error naming %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	t.Run("r against the tensors", func(t *testing.T) {
		// PEFT's own folder of the first loadable case with r edited from 4 to 2.
		dir := filepath.Join(root, "load", loadable[0].name)
		path := filepath.Join(dir, ConfigFile)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var cfg map[string]any
		if err := json.Unmarshal(b, &cfg); err != nil {
			t.Fatal(err)
		}
		cfg["r"] = 2
		if b, err = json.Marshal(cfg); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if m, err := Load(dir, base, false, 0); err == nil {
			m.Free()
			t.Fatal("loaded with r = 2 over rank-4 tensors")
		} else if !strings.Contains(err.Error(), "has rank 4") || !strings.Contains(err.Error(), "r = 2") {
			t.Fatalf("error %q does not name the rank against r", err)
		}
	})
}

// drawAdapters sets every adapter matrix of m (lora_B too, which starts at
// zero) to values drawn from N(0, 0.1).
func drawAdapters(t *testing.T, m *torch.Model, seed uint64) {
	t.Helper()
	for i, name := range m.Names() {
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
		for j := range vals {
			vals[j] = float32(0.1 * math.Sin(float64(seed)+float64(7*i+13*j)))
		}
		setParam(t, m, name, vals, shape)
	}
}

// qwen35Base is a Qwen3.5 text model of hybridConfig (three Gated
// DeltaNet layers, then a gated attention layer), saved as a Hugging Face
// folder (qwen3_5_text) that transformers loads (torch's TestInteropQwen35
// checks the export).
func qwen35Base(t *testing.T, seed uint64) (*torch.Model, string) {
	t.Helper()
	return savedBase(t, hybridConfig(), seed)
}

// savedBase is a random f32 model of config c, weights drawn at 0.1 (as
// transformers' initializer_range 0.1), saved as agentrl saves it into a
// folder of its own, for PEFT to load with transformers.
func savedBase(t *testing.T, c torch.Config, seed uint64) (*torch.Model, string) {
	t.Helper()
	m, err := torch.NewRandomModel(c, torch.Float32, torch.CPU, false, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Free)
	if err := m.InitRandom(seed, 0.1); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "base")
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	return m, dir
}

// Adapters on a Qwen3.5's Gated DeltaNet layers (linear_attn.in_proj_qkv,
// in_proj_z, in_proj_b, in_proj_a, out_proj) through Hugging Face PEFT,
// both ways, against PEFT's float64 forward within 1e-4, over 70 tokens
// (the chunked DeltaNet form over two chunks of 64):
//   - agentrl's adapter folder with all twelve targets (all-linear: the
//     DeltaNet's on layers 0-2, the attention's on layer 3, the MLP's on
//     all), every matrix drawn, loads with PeftModel.from_pretrained with
//     agentrl's logits, and the gradients of its adapters of
//     L = -mean logprob of the row are PEFT's autograd's within 1e-4;
//   - adapters made by PEFT on the five DeltaNet projections, and with
//     all-linear (saved as module paths: the DeltaNet's on layers 0-2
//     only, the attention's on layer 3 only), load in agentrl with PEFT's
//     logits;
//   - PEFT's adapter on the depthwise conv1d (a LoRA of a Conv1d layer,
//     which agentrl does not implement) is refused, naming it.
func TestInteropPEFTQwen35(t *testing.T) {
	pyinterop.Python(t)
	base, baseDir := qwen35Base(t, 5)
	root := t.TempDir()
	ids, ours, oursDir := savedAllLinear(t, base, baseDir, root, 70)
	deltanet := []string{"in_proj_qkv", "in_proj_z", "in_proj_b", "in_proj_a", "out_proj"}
	loadable := []struct {
		name string
		make map[string]any
	}{
		{"peft deltanet r=4 alpha=4", map[string]any{"target_modules": deltanet, "r": 4, "lora_alpha": 4}},
		{"peft all-linear r=8 alpha=8", map[string]any{"target_modules": "all-linear", "r": 8, "lora_alpha": 8}},
	}
	grads := filepath.Join(root, "grads.safetensors")
	jobs := []peftJob{{Base: baseDir, Adapter: oursDir, Logits: true, Grads: grads}}
	for i, c := range loadable {
		jobs = append(jobs, peftJob{Base: baseDir, Adapter: filepath.Join(root, "load", c.name), Make: c.make, Seed: 40 + i, Logits: true})
	}
	conv := peftJob{Base: baseDir, Adapter: filepath.Join(root, "refuse", "conv1d"), Seed: 50,
		// PEFT adapts a grouped conv at a rank that is a multiple of its
		// groups: the conv's 64 channels.
		Make: map[string]any{"target_modules": []string{"in_proj_qkv", "conv1d"}, "r": 64, "lora_alpha": 64}}
	jobs = append(jobs, conv)
	var ans struct {
		Jobs []peftAnswer `json:"jobs"`
		PEFT string       `json:"peft"`
	}
	pyinterop.Run(t, "testdata/interop/peft_adapters.py", map[string]any{"ids": ids, "jobs": jobs}, &ans)
	t.Logf("PEFT %s", ans.PEFT)

	t.Run("agentrl to PEFT", func(t *testing.T) {
		d, moved := compare(logitsOf(t, ours, ids), ans.Jobs[0])
		t.Logf("| agentrl adapter on a Qwen3.5 (all 12 targets, r=4) | PeftModel.from_pretrained | logits | %.1e |", d)
		if d > 1e-4 || moved < 1e-2 {
			t.Fatalf("PEFT's logits of agentrl's adapter differ from agentrl's by %g (the adapters move PEFT's by %g)", d, moved)
		}
		if got := ans.Jobs[0].AdapterConfig["target_modules"]; len(got.([]any)) != 12 {
			t.Errorf("target_modules written %v, want the twelve", got)
		}
	})
	t.Run("gradients against PEFT", func(t *testing.T) {
		loss, worst := adapterGrads(t, ours, ids, grads)
		t.Logf("loss %.6f (PEFT %.6f); adapter gradients: max |diff| %.2e", loss, ans.Jobs[0].Loss, worst)
		if math.Abs(loss-ans.Jobs[0].Loss) > 1e-5 {
			t.Errorf("loss %v, PEFT's %v", loss, ans.Jobs[0].Loss)
		}
	})
	for i, c := range loadable {
		t.Run(c.name, func(t *testing.T) {
			a := ans.Jobs[1+i]
			m, err := Load(jobs[1+i].Adapter, base, false, 0)
			if err != nil {
				t.Fatalf("agentrl refuses PEFT's adapter (config %v): %v", a.AdapterConfig, err)
			}
			defer m.Free()
			d, moved := compare(logitsOf(t, m, ids), a)
			t.Logf("| %s (Qwen3.5) | peft.Load | logits | %.1e |", c.name, d)
			if d > 1e-4 || moved < 1e-2 {
				t.Fatalf("agentrl's logits of PEFT's adapter differ from PEFT's by %g (the adapters move PEFT's by %g)", d, moved)
			}
		})
	}
	t.Run("peft conv1d refused", func(t *testing.T) {
		m, err := Load(conv.Adapter, base, false, 0)
		if err == nil {
			m.Free()
			t.Fatal("loaded an adapter on conv1d")
		}
		if !strings.Contains(err.Error(), `target module "conv1d"`) {
			t.Errorf("error %q does not name conv1d", err)
		}
	})
}

// adapterGrads runs m's training forward over ids (one row), backpropagates
// L = -mean logprob, holds the gradient of every adapter matrix to the one
// the safetensors file grads holds (PEFT's autograd) within 1e-4, and
// returns L and the largest difference.
func adapterGrads(t *testing.T, m *torch.Model, ids []int64, grads string) (float64, float64) {
	t.Helper()
	T := len(ids)
	attn, pos := make([]int64, T), make([]int64, T)
	for i := range ids {
		attn[i], pos[i] = 1, int64(i)
	}
	o, err := m.Forward(torch.Batch{B: 1, T: T, IDs: ids, Attn: attn, Positions: pos}, torch.ForwardOptions{Grad: true})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Free()
	s := torch.NewScope()
	defer s.Close()
	loss := s.DivScalar(s.Neg(s.Sum(o.LogProbs)), float64(T-1))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	lv, _ := loss.Item()
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	r, err := safetensors.Open(grads)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if len(r.Names()) != len(m.Names()) {
		t.Errorf("PEFT has %d adapter gradients, agentrl %d adapter matrices", len(r.Names()), len(m.Names()))
	}
	worst := 0.0
	for _, name := range m.Names() {
		want, err := r.Float32s(name)
		if err != nil {
			t.Fatalf("PEFT has no gradient for %s: %v", name, err)
		}
		p, err := m.Param(name)
		if err != nil {
			t.Fatal(err)
		}
		g, err := p.Grad()
		p.Free()
		if err != nil || g == nil {
			t.Fatalf("%s has no gradient (%v)", name, err)
		}
		got, _ := g.Float32s()
		g.Free()
		d := 0.0
		for i := range want {
			d = math.Max(d, math.Abs(float64(got[i]-want[i])))
		}
		worst = math.Max(worst, d)
		if d > 1e-4 {
			t.Errorf("gradient of %s differs from PEFT's by %g", name, d)
		}
	}
	if worst == 0 {
		t.Error("every gradient equals PEFT's to the bit: the check compares nothing")
	}
	return lv, worst
}

// savedAllLinear is the adapter the interop tests start from: an
// all-linear LoRA of rank 4 over base, every matrix drawn (seed 9), saved
// as a PEFT folder under root/agentrl; with it the n token ids the tests
// feed (a fixed spread over the vocabulary from 3). The model is freed at
// the test's end.
func savedAllLinear(t *testing.T, base *torch.Model, baseDir, root string, n int) ([]int64, *torch.Model, string) {
	t.Helper()
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64(3 + (37*i+11*(i*i%13))%98)
	}
	ours, err := torch.NewLoRAModel(base, torch.LoRA{Rank: 4, Alpha: 4, Targets: base.Config.AllLinear()}, false, 9)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ours.Free)
	drawAdapters(t, ours, 9)
	oursDir := filepath.Join(root, "agentrl")
	if err := Save(oursDir, ours, baseDir); err != nil {
		t.Fatal(err)
	}
	return ids, ours, oursDir
}
