package torch

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// newLoRA makes a LoRA model over base, or fails the test.
func newLoRA(t *testing.T, base *Model, c LoRA, valueHead bool) *Model {
	t.Helper()
	m, err := NewLoRAModel(base, c, valueHead, 5)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// allLinear is LoRA on every target, rank 4, alpha 8 (scale 2).
func allLinear() LoRA {
	return LoRA{Rank: 4, Alpha: 8, Targets: slices.Clone(LoRATargets)}
}

// A LoRA model's parameters are its adapters under PEFT's keys, layer by
// layer and target by target (A then B), then the value head: on the
// Qwen3 config, whose q_proj is [128, 40] and o_proj [40, 128] (4 heads
// of 32 over hidden 40), k/v_proj [64, 40] (2 kv heads), gate/up [52, 40]
// and down [40, 52], 2 layers x 7 targets x 2 + 2 = 30 tensors. A is
// [r, in], B [out, r]; A is drawn from U(-1/sqrt(in), 1/sqrt(in))
// (Kaiming-uniform with a = sqrt(5): gain sqrt(2/6), bound gain *
// sqrt(3/in) = 1/sqrt(in)), B is zero, every one f32 and requires grad,
// and Config, DType and LoRA() describe the model.
func TestLoRAParamsArePEFTAdapters(t *testing.T) {
	base, err := NewRandomModel(qwen3Config(), Float32, CPU, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Free()
	c := allLinear()
	m := newLoRA(t, base, c, true)
	defer m.Free()
	io := map[string][2]int64{"self_attn.q_proj": {40, 128}, "self_attn.k_proj": {40, 64}, "self_attn.v_proj": {40, 64},
		"self_attn.o_proj": {128, 40}, "mlp.gate_proj": {40, 52}, "mlp.up_proj": {40, 52}, "mlp.down_proj": {52, 40}}
	var want []string
	shapes := map[string][]int64{}
	for i := 0; i < 2; i++ {
		for _, mod := range []string{"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
			"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"} {
			key := fmt.Sprintf("base_model.model.model.layers.%d.%s.lora_", i, mod)
			want = append(want, key+"A.weight", key+"B.weight")
			shapes[key+"A.weight"] = []int64{4, io[mod][0]}
			shapes[key+"B.weight"] = []int64{io[mod][1], 4}
		}
	}
	want = append(want, "v_head.summary.weight", "v_head.summary.bias")
	shapes["v_head.summary.weight"], shapes["v_head.summary.bias"] = []int64{1, 40}, []int64{1}
	if got := m.Names(); !slices.Equal(got, want) {
		t.Fatalf("names:\n%v\nwant\n%v", got, want)
	}
	ps, err := m.Params()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2*2*7+2 {
		t.Fatalf("%d params, want 30", len(ps))
	}
	for i, p := range ps {
		name := want[i]
		shape, _ := p.Shape()
		if !slices.Equal(shape, shapes[name]) || p.DType() != Float32 || !p.RequiresGrad() {
			t.Errorf("%s: shape %v dtype %s requires grad %v; want %v f32 with grad", name, shape, p.DType(), p.RequiresGrad(), shapes[name])
		}
		vals, _ := p.Float64s()
		switch {
		case strings.HasSuffix(name, "lora_A.weight"):
			bound, top := 1/math.Sqrt(float64(shape[1])), 0.0
			for _, v := range vals {
				top = math.Max(top, math.Abs(v))
			}
			// 4*40 or more draws: the largest lies above 0.9 of the bound
			// unless the draw is not uniform on it (chance 0.9^160 < 1e-7).
			if top > bound || top < 0.9*bound {
				t.Errorf("%s: largest |A| %v, want in [0.9, 1] x 1/sqrt(%d) = %v", name, top, shape[1], bound)
			}
		case strings.HasSuffix(name, "lora_B.weight"):
			if slices.ContainsFunc(vals, func(v float64) bool { return v != 0 }) {
				t.Errorf("%s is not zero at init", name)
			}
		}
		p.Free()
	}
	if m.Config.Hidden != base.Config.Hidden || m.Config.Layers != 2 || m.DType != Float32 || !m.ValueHead {
		t.Errorf("config %+v dtype %s value head %v", m.Config, m.DType, m.ValueHead)
	}
	if l := m.LoRA(); l == nil || l.Rank != 4 || l.Scale() != 2 || !slices.Equal(l.Targets, LoRATargets) {
		t.Errorf("LoRA() = %+v", l)
	}
	if base.LoRA() != nil {
		t.Error("a plain model reports adapters")
	}
	if err := m.Save(t.TempDir()); err == nil || !strings.Contains(err.Error(), "peft.Save") {
		t.Errorf("Save of a LoRA model: %v", err)
	}
	// Two targets only: 2 layers x 2 targets x 2 tensors, no value head.
	two := newLoRA(t, base, LoRA{Rank: 2, Alpha: 1, Targets: []string{"down_proj", "q_proj"}}, false)
	defer two.Free()
	if n := two.Names(); len(n) != 8 || n[0] != "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight" ||
		n[3] != "base_model.model.model.layers.0.mlp.down_proj.lora_B.weight" {
		t.Errorf("q_proj and down_proj adapters: %v", n)
	}
}

// Validate names what is wrong.
func TestLoRAValidate(t *testing.T) {
	ok := LoRA{Rank: 8, Alpha: 16, Dropout: 0.05, Targets: []string{"v_proj", "q_proj"}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if ok.Scale() != 2 {
		t.Errorf("scale %v, want 16/8 = 2", ok.Scale())
	}
	bad := func(edit func(*LoRA), want string) {
		t.Helper()
		c := ok
		c.Targets = slices.Clone(ok.Targets)
		edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: error %v, want it to say %q", c, err, want)
		}
	}
	bad(func(c *LoRA) { c.Targets[1] = "qproj" }, `lora target "qproj": want one of q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj`)
	bad(func(c *LoRA) { c.Targets = append(c.Targets, "lm_head") }, `lora target "lm_head"`)
	bad(func(c *LoRA) { c.Targets = append(c.Targets, "v_proj") }, `"v_proj" is named twice`)
	bad(func(c *LoRA) { c.Targets = nil }, "lora targets: none given")
	bad(func(c *LoRA) { c.Rank = 0 }, "lora rank must be positive, got 0")
	bad(func(c *LoRA) { c.Rank = -4 }, "lora rank must be positive, got -4")
	bad(func(c *LoRA) { c.Alpha = 0 }, "lora alpha must be positive, got 0")
	bad(func(c *LoRA) { c.Alpha = math.NaN() }, "lora alpha must be positive")
	bad(func(c *LoRA) { c.Dropout = 1 }, "lora dropout must be in [0, 1), got 1")
	bad(func(c *LoRA) { c.Dropout = -0.1 }, "lora dropout must be in [0, 1), got -0.1")
	base, _ := NewRandomModel(tinyConfig(), Float32, CPU, false, 1)
	defer base.Free()
	c := ok
	c.Rank = 0
	if _, err := NewLoRAModel(base, c, false, 1); err == nil || !strings.Contains(err.Error(), "rank") {
		t.Errorf("NewLoRAModel with rank 0: %v", err)
	}
	m := newLoRA(t, base, ok, false)
	defer m.Free()
	if _, err := NewLoRAModel(m, ok, false, 1); err == nil || !strings.Contains(err.Error(), "itself a LoRA model") {
		t.Errorf("LoRA over a LoRA model: %v", err)
	}
	if err := base.SetAdapters(false); err == nil {
		t.Error("SetAdapters on a plain model")
	}
	if _, err := NewMergedModel(base); err == nil {
		t.Error("NewMergedModel of a plain model")
	}
	if _, err := NewEngine(m, 1, 8); err == nil || !strings.Contains(err.Error(), "merged") {
		t.Errorf("an engine on a LoRA model: %v", err)
	}
}

// setRandomB gives every lora_B values 0.3 sin(7k + i) (k the parameter's
// index), so the adapters change the forward.
func setRandomB(t *testing.T, m *Model) {
	t.Helper()
	editParams(t, m, []string{"lora_B.weight"}, func(k int, vals []float32) {
		for i := range vals {
			vals[i] = float32(0.3 * math.Sin(float64(7*k+i)))
		}
	})
}

// A fresh LoRA model (B = 0) computes exactly the base's logits: each
// target adds scale * B A x = 0. With B nonzero the adapters move the
// logits; switched off, the model is the base again (the KL reference),
// bit for bit. The base may be freed first: the LoRA model holds its
// weights.
func TestLoRAFreshEqualsBaseAndAdaptersOff(t *testing.T) {
	base, _ := NewRandomModel(tinyConfig(), Float32, CPU, false, 9)
	ids := seq(11, 4)
	want := fullLogits(t, base, ids)
	m := newLoRA(t, base, allLinear(), false)
	defer m.Free()
	base.Free()
	if got := fullLogits(t, m, ids); !slices.Equal(got, want) {
		t.Fatalf("fresh LoRA model differs from its base by %v", maxDiff32(got, want))
	}
	setRandomB(t, m)
	if d := maxDiff32(fullLogits(t, m, ids), want); d < 1e-3 {
		t.Fatalf("adapters with B != 0 moved the logits by only %v", d)
	}
	if err := m.SetAdapters(false); err != nil {
		t.Fatal(err)
	}
	if got := fullLogits(t, m, ids); !slices.Equal(got, want) {
		t.Fatalf("adapters off differ from the base by %v", maxDiff32(got, want))
	}
	if err := m.SetAdapters(true); err != nil {
		t.Fatal(err)
	}
	if d := maxDiff32(fullLogits(t, m, ids), want); d < 1e-3 {
		t.Fatalf("adapters back on moved the logits by only %v", d)
	}
}
