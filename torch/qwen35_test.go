package torch

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
)

// qwen35Small is a small Qwen3.5 text config (Qwen3_5TextConfig's
// arguments): three Gated DeltaNet layers and a gated attention layer
// (the published pattern), two key heads serving four value heads, head_dim
// 32 of which RoPE turns a quarter, RoPE base 1e7, weights drawn wide.
func qwen35Small() map[string]any {
	return map[string]any{"vocab_size": 384, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 4,
		"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 512,
		"rms_norm_eps": 1e-6, "initializer_range": 0.1, "bos_token_id": 1, "eos_token_id": 2,
		"linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16, "linear_value_head_dim": 16,
		"linear_conv_kernel_dim": 4, "tie_word_embeddings": false,
		"rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 1e7, "partial_rotary_factor": 0.25}}
}

// qwen35SmallVision is a small vision tower for the multimodal checkpoint.
var qwen35SmallVision = map[string]any{"depth": 1, "hidden_size": 32, "intermediate_size": 64, "num_heads": 2,
	"out_hidden_size": 64, "patch_size": 4, "num_position_embeddings": 16}

// Qwen3.5 models made by transformers 5: the text model alone
// (Qwen3_5ForCausalLM) and the multimodal checkpoint
// (Qwen3_5ForConditionalGeneration: text_config, the vision tower under
// model.visual.*, the text under model.language_model.*, plus mtp.*
// tensors), tied and untied. Rows of 150 and 67 tokens run the chunked
// form over three and two chunks of 64; a 70-token prefix prefills two.
// Logits, the training forward's logprobs and greedy decoding (the
// libtorch paths) against transformers' float64 forward and generate
// (its recurrent form), within 1e-4 in f32. Then, for each, the training
// checks of qwen35Training: gradients against transformers' autograd and
// the export loaded in transformers.
func TestInteropQwen35(t *testing.T) {
	pyinterop.Python(t)
	root := t.TempDir()
	tied := qwen35Small()
	tied["tie_word_embeddings"] = true
	var models []hfModel
	var names []string
	for i, c := range []struct {
		name, family string
		config       map[string]any
		vision       map[string]any
	}{
		{"qwen3_5-text", "qwen3_5", qwen35Small(), nil},
		{"qwen3_5-multimodal-tied", "qwen3_5_vl", tied, qwen35SmallVision},
	} {
		models = append(models, hfModel{Dir: filepath.Join(root, c.name), Family: c.family, Config: c.config, Vision: c.vision,
			Style: "5", Seed: 40 + i, RefDType: "float64", Full: []int{150, 67, 3}, Explicit: true,
			Decode: []int{70, 1, 9}, Steps: 6})
		names = append(names, c.name)
	}
	interopParity(t, models, names)
	for i, hm := range models {
		t.Run("training/"+names[i], func(t *testing.T) { qwen35Training(t, hm.Dir) })
	}
}

// gradChecked is what testdata/interop/grad_check.py answers.
type gradChecked struct {
	Loss                float64 `json:"loss"`
	Loss32              float64 `json:"loss32"` // transformers' float32 short loss (with grads32)
	ExportClass         string  `json:"export_class"`
	ExportMaxDiff       float64 `json:"export_max_diff"`
	ExportLogitsMaxDiff float64 `json:"export_logits_max_diff"`
}

// gradReference checks that agentrl's export of the model folder dir (Save
// of the model loaded in f32) loads in transformers as class with every
// parameter and the logits equal, and returns the folder's right-padded
// case with transformers' loss over it and the file of its gradients
// (grad_check.py, float64, transformers' attention attn: eager, sdpa).
func gradReference(t *testing.T, dir, class, attn string) (full fixtureCase, ref gradChecked, grads string) {
	for _, c := range loadCases(t, dir) {
		if c.Name == "right_padded" {
			full = c
		}
	}
	m, err := LoadModel(dir, Float32, CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(t.TempDir(), "export")
	err = m.Save(export)
	m.Free()
	if err != nil {
		t.Fatal(err)
	}
	grads = filepath.Join(t.TempDir(), "grads.safetensors")
	pyinterop.Run(t, "testdata/interop/grad_check.py", map[string]any{"dir": dir, "ids": full.InputIDs,
		"mask": full.AttentionMask, "grads": grads, "export": export, "attn": attn}, &ref)
	t.Logf("export: loads as %s, parameters differ by %g, logits by %g", ref.ExportClass, ref.ExportMaxDiff, ref.ExportLogitsMaxDiff)
	if ref.ExportClass != class || ref.ExportMaxDiff != 0 || ref.ExportLogitsMaxDiff != 0 {
		t.Errorf("agentrl's export loads in transformers as %s, its parameters differing from the model's by %g, its logits by %g",
			ref.ExportClass, ref.ExportMaxDiff, ref.ExportLogitsMaxDiff)
	}
	return full, ref, grads
}

// qwen35Training checks the training side of the model folder dir (made by
// transformers) against transformers in float64, over the rows of its
// right-padded case (150, 67 and 3 tokens: the chunked DeltaNet form over
// chunk boundaries):
//   - the gradient of every parameter (the DeltaNet's A_log, dt_bias,
//     conv1d, norms and projections, the gated attention, the MLPs, the
//     embeddings, tied or not) of L = -mean logprob over the real
//     next-token pairs, against transformers' autograd: within 1e-4 in f32
//     by the training forward unpacked, with activation checkpointing, and
//     packed (the rows one after the other in one row, each a tree of its
//     own), with and without checkpointing; L itself within 1e-5 (the f64
//     gradients: TestQwen35GradientsFiniteDifferences);
//   - agentrl's export (Save of the model loaded in f32) loads in
//     transformers as Qwen3_5ForCausalLM with no key missing or unexpected,
//     every parameter equal to the folder's and the same logits.
func qwen35Training(t *testing.T, dir string) {
	full, ref, grads := gradReference(t, dir, "Qwen3_5ForCausalLM", "eager")
	b := Batch{B: len(full.InputIDs), T: len(full.InputIDs[0]), IDs: flat(full.InputIDs), Attn: flat(full.AttentionMask),
		Positions: flat(full.PositionIDs)}
	for _, form := range []struct {
		name         string
		packed, ckpt bool
	}{{"unpacked", false, false}, {"checkpointed", false, true}, {"packed", true, false}, {"packed checkpointed", true, true}} {
		t.Run(form.name, func(t *testing.T) {
			m, err := LoadModel(dir, Float32, CPU, false)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Free()
			if err := m.SetCheckpointing(form.ckpt); err != nil {
				t.Fatal(err)
			}
			loss := shortLoss(t, m, b, full, form.packed)
			if math.Abs(loss-ref.Loss) > 1e-5 {
				t.Errorf("loss %v, transformers %v", loss, ref.Loss)
			}
			d := holdGradients(t, m, grads, 1e-4, false)
			t.Logf("| %s | loss %.6f (transformers %.6f) | gradients: max |diff| %.2e |", form.name, loss, ref.Loss, d)
		})
	}
}

// shortLoss runs m's training forward over the right-padded batch b of
// case c (packed: its rows packed by packRows), computes L = -mean
// logprob over the real next-token pairs, backpropagates it and returns
// its value.
func shortLoss(t *testing.T, m *Model, b Batch, c fixtureCase, packed bool) float64 {
	t.Helper()
	s := NewScope()
	defer s.Close()
	var loss *Tensor
	if packed {
		pb, want := packRows(c)
		o, err := m.ForwardPacked(pb, ForwardOptions{Grad: true})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Free()
		loss = s.DivScalar(s.Neg(s.Sum(o.LogProbs)), float64(len(want)))
	} else {
		pairs := make([]float32, b.B*(b.T-1))
		var n float64
		for r := range b.B {
			for p := 0; p+1 < b.T; p++ {
				if c.AttentionMask[r][p] == 1 && c.AttentionMask[r][p+1] == 1 {
					pairs[r*(b.T-1)+p] = 1
					n++
				}
			}
		}
		o, err := m.Forward(b, ForwardOptions{Grad: true})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Free()
		mask := s.Adopt(FromFloat32(pairs, int64(b.B), int64(b.T-1)))
		loss = s.DivScalar(s.Neg(s.Sum(s.Mul(o.LogProbs, mask))), n)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	v, _ := loss.Item()
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	return v
}

// qwen35Config is a small Qwen3.5 for tests without transformers.
func qwen35Config() Config {
	return Config{ModelType: qwen35, Vocab: 97, Hidden: 32, Intermediate: 48, Layers: 4, Heads: 4, KVHeads: 2,
		HeadDim: 16, RMSEps: 1e-6, RopeTheta: 1e7, MaxPositions: 512, PartialRotary: 0.25,
		LayerTypes:     []string{LinearAttention, LinearAttention, LinearAttention, FullAttention},
		LinearKeyHeads: 2, LinearValueHeads: 4, LinearKeyDim: 8, LinearValueDim: 8, LinearConvKernel: 4}
}

// The state a Gated DeltaNet layer carries across decode steps (and from
// a prefill of 70 tokens, two chunks, to the steps after) gives the logits
// the chunked forward gives over the whole sequence, on both libtorch
// decode paths, and a slot copied mid-sequence continues as its source.
func TestQwen35DecodeStateEqualsChunkedForward(t *testing.T) {
	m, err := NewRandomModel(qwen35Config(), Float64, CPU, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if err := m.InitRandom(3, 0.2); err != nil {
		t.Fatal(err)
	}
	ids := seq(80, 7)
	full := logitsOf(t, m, ids)
	V := m.Config.Vocab
	for _, p := range []DecodePath{DecodeFused, DecodeUnfused} {
		t.Run(p.String(), func(t *testing.T) {
			e := newEngineOn(t, m, 3, p)
			defer e.Free()
			if err := e.Prefill(1, ids[:70]); err != nil {
				t.Fatal(err)
			}
			worst := 0.0
			for n := 70; n < len(ids); n++ {
				l, err := e.PendingLogits(1)
				if err != nil {
					t.Fatal(err)
				}
				worst = math.Max(worst, maxDiff(l, full[(n-1)*V:n*V]))
				if n == 75 {
					if err := e.CopySlot(1, 2); err != nil {
						t.Fatal(err)
					}
				}
				// Feed the sequence's own next token: prefill of one token
				// continues the slot's state as a step does.
				if err := e.Prefill(1, ids[n:n+1]); err != nil {
					t.Fatal(err)
				}
				if n >= 75 {
					if err := e.Prefill(2, ids[n:n+1]); err != nil {
						t.Fatal(err)
					}
					l2, _ := e.PendingLogits(2)
					worst = math.Max(worst, maxDiff(l2, full[n*V:(n+1)*V]))
				}
			}
			t.Logf("largest difference from the chunked forward: %.2e", worst)
			if worst > 1e-5 { // the pending logits are float32
				t.Fatalf("decode logits differ from the full forward by %g", worst)
			}
		})
	}
}

// logitsOf is m's logits over ids as one row, flattened [T*V].
func logitsOf(t *testing.T, m *Model, ids []int64) []float64 {
	t.Helper()
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
	return got
}

// qwen35Outer is a multimodal Qwen3.5 config.json as transformers 5.24
// writes it (Qwen3_5ForConditionalGeneration), its text_config with the
// published checkpoints' RoPE keys (mrope_section, mrope_interleaved).
const qwen35Outer = `{"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5", "dtype": "bfloat16",
 "tie_word_embeddings": true, "eos_token_id": 248046, "image_token_id": 248056,
 "text_config": {"model_type": "qwen3_5_text", "vocab_size": 248320, "hidden_size": 1024, "intermediate_size": 3584,
  "num_hidden_layers": 8, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256, "rms_norm_eps": 1e-6,
  "hidden_act": "silu", "attn_output_gate": true, "tie_word_embeddings": true, "max_position_embeddings": 262144,
  "linear_num_key_heads": 16, "linear_num_value_heads": 16, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
  "linear_conv_kernel_dim": 4, "mtp_num_hidden_layers": 1,
  "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention",
                  "linear_attention", "linear_attention", "linear_attention", "full_attention"],
  "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25,
                      "mrope_section": [11, 11, 10], "mrope_interleaved": true}},
 "vision_config": {"model_type": "qwen3_5_vision", "depth": 12, "hidden_size": 768}}`

// A multimodal Qwen3.5 config reads as its text model: the DeltaNet
// sizes, the layer types, RoPE on 64 of 256 dimensions at theta 1e7, the
// outer eos and dtype, weights under model.language_model.; written back,
// it is the text model's config (qwen3_5_text, Qwen3_5ForCausalLM) and
// reads the same.
func TestConfigQwen35(t *testing.T) {
	c, err := ParseConfig([]byte(qwen35Outer), "config.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.ModelType != qwen35 || !c.Wrapped || !c.Hybrid() || c.RotaryDim() != 64 || c.RopeTheta != 1e7 ||
		c.LinearKeyHeads != 16 || c.LinearValueDim != 128 || c.LinearConvKernel != 4 || c.EOS != 248046 ||
		c.TorchDType != "bfloat16" || !c.TieEmbeddings || c.LayerTypes[3] != FullAttention || c.LayerTypes[4] != LinearAttention {
		t.Fatalf("read as %+v", c)
	}
	if got := c.checkpointName("model.layers.0.linear_attn.A_log"); got != "model.language_model.layers.0.linear_attn.A_log" {
		t.Errorf("checkpoint name %s", got)
	}
	if !c.skippedTensor("mtp.fc.weight") || !c.skippedTensor("model.visual.blocks.0.attn.qkv.weight") ||
		c.skippedTensor("model.language_model.norm.weight") {
		t.Error("skipped tensors: want exactly model.visual.* and mtp.*")
	}
	b, err := c.JSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseConfig(b, "written")
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if back.Wrapped || back.RotaryDim() != 64 || back.RopeTheta != 1e7 || !slices.Equal(back.LayerTypes, c.LayerTypes) ||
		back.LinearValueHeads != 16 || back.Raw["architectures"] == nil {
		t.Fatalf("written and read back as %+v\n%s", back, b)
	}
	if a := back.Raw["architectures"].([]any); len(a) != 1 || a[0] != "Qwen3_5ForCausalLM" {
		t.Errorf("architectures %v", a)
	}
	// Without layer_types, every 4th layer is full attention.
	noTypes := strings.Replace(qwen35Outer, `"layer_types"`, `"unused_layer_types"`, 1)
	if c, err := ParseConfig([]byte(noTypes), "config.json"); err != nil || c.LayerTypes[3] != FullAttention || c.LayerTypes[2] != LinearAttention {
		t.Fatalf("without layer_types: %v %v", c.LayerTypes, err)
	}
}

// Every Qwen3.5 setting that changes the math and is not implemented is
// refused, naming it.
func TestConfigQwen35Refusals(t *testing.T) {
	for _, c := range []struct{ old, new, want string }{
		{`"linear_attention", "linear_attention", "linear_attention", "full_attention",
                  "linear_attention"`, `"linear_attention", "linear_attention", "linear_attention", "full_attention",
                  "sliding_attention"`, `layer_types[4] "sliding_attention" is not supported`},
		{`"attn_output_gate": true`, `"attn_output_gate": false`, "attn_output_gate false is not supported"},
		{`"dtype": "bfloat16",`, `"dtype": "bfloat16", "quantization_config": {"quant_method": "mxfp4"},`, "quantization_config"},
		{`"hidden_act": "silu",`, `"hidden_act": "silu", "quantization_config": {"quant_method": "fp8"},`, "quantization_config"},
		{`"tie_word_embeddings": true, "max_position`, `"tie_word_embeddings": false, "max_position`, "tie_word_embeddings true and text_config.tie_word_embeddings false differ"},
		{`"rope_type": "default"`, `"rope_type": "linear", "factor": 2`, `rope_type "linear" is not supported for qwen3_5_text`},
		{`"model_type": "qwen3_5_text"`, `"model_type": "qwen3_next"`, `text_config.model_type "qwen3_next" is not supported`},
		{`["Qwen3_5ForConditionalGeneration"]`, `["Qwen3_5MoeForConditionalGeneration"]`, "Qwen3_5MoeForConditionalGeneration is not supported"},
		{`"linear_num_value_heads": 16`, `"linear_num_value_heads": 24`, "must be a multiple of linear_num_key_heads"},
		{`"hidden_act": "silu",`, `"hidden_act": "silu", "attention_bias": true,`, "attention_bias true is not supported"},
		{`"partial_rotary_factor": 0.25`, `"partial_rotary_factor": 0.02`, "gives 5 RoPE dimensions"},
	} {
		src := strings.Replace(qwen35Outer, c.old, c.new, 1)
		if src == qwen35Outer {
			t.Fatalf("%q not in the config", c.old)
		}
		_, err := ParseConfig([]byte(src), "config.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.new, err, c.want)
		}
	}
}

// A packed forward of a hybrid model gives each sequence of a prefix tree
// (two sequences sharing a 70-token prefix, then 40 and 9 tokens of their
// own, and two padding tokens that attend only themselves) the
// log-probabilities the plain forward gives it alone: the DeltaNet state
// and conv of the second branch continue the prefix, not the first
// branch, over chunk boundaries (the prefix ends inside the second chunk).
func TestQwen35PackedTreeEqualsAlone(t *testing.T) {
	m, err := NewRandomModel(qwen35Config(), Float64, CPU, false, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if err := m.InitRandom(5, 0.2); err != nil {
		t.Fatal(err)
	}
	packedTreeEqualsAlone(t, m)
}

// packedTreeEqualsAlone checks the packed forward of the hybrid model m
// over the prefix tree of TestQwen35PackedTreeEqualsAlone against the
// plain forward of each sequence alone, and that a mask that is not a
// prefix tree is refused.
func packedTreeEqualsAlone(t *testing.T, m *Model) {
	prefix, a, b := seq(70, 1), seq(40, 2), seq(9, 3)
	seqs := [][]int64{append(append([]int64{}, prefix...), a...), append(append([]int64{}, prefix...), b...)}
	// Packed: prefix, a, b, two pads; parent of b[0] is prefix's last.
	T := len(prefix) + len(a) + len(b) + 2
	ids := append(append(append(append([]int64{}, prefix...), a...), b...), 0, 0)
	parent := make([]int, T)
	pos := make([]int64, T)
	for i := range T {
		parent[i], pos[i] = i-1, int64(i)
	}
	bStart := len(prefix) + len(a)
	parent[bStart] = len(prefix) - 1
	for i := bStart; i < bStart+len(b); i++ {
		pos[i] = int64(len(prefix) + i - bStart)
	}
	parent[T-2], parent[T-1] = -1, -1
	pos[T-2], pos[T-1] = 0, 0
	allowed := make([]uint8, T*T)
	for i := range T {
		for j := i; j >= 0; j = parent[j] {
			allowed[i*T+j] = 1
		}
	}
	// Targets: every token of each sequence after its first, at its
	// predecessor's packed position.
	node := func(s, t int) int {
		if t < len(prefix) {
			return t
		}
		if s == 0 {
			return t
		}
		return bStart + t - len(prefix)
	}
	var row, src, tgt []int64
	for s, sq := range seqs {
		for t := 1; t < len(sq); t++ {
			row, src, tgt = append(row, 0), append(src, int64(node(s, t-1))), append(tgt, sq[t])
		}
	}
	out, err := m.ForwardPacked(PackedBatch{B: 1, T: T, IDs: ids, Positions: pos, Allowed: allowed, Row: row, Src: src, Tgt: tgt},
		ForwardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := out.LogProbs.Float64s()
	out.Free()
	k, worst := 0, 0.0
	for _, sq := range seqs {
		n := len(sq)
		p, attn := make([]int64, n), make([]int64, n)
		for i := range p {
			p[i], attn[i] = int64(i), 1
		}
		o, err := m.Forward(Batch{B: 1, T: n, IDs: sq, Attn: attn, Positions: p}, ForwardOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := o.LogProbs.Float64s()
		o.Free()
		for _, w := range want {
			worst = math.Max(worst, math.Abs(got[k]-w))
			k++
		}
	}
	t.Logf("largest difference from each sequence alone: %.2e", worst)
	if worst > 1e-10 {
		t.Fatalf("packed logprobs differ from each sequence's alone by %g", worst)
	}
	// A mask that is not a prefix tree (a query that skips its parent's
	// keys) is refused for a hybrid model.
	allowed[(T-3)*T+3] = 0
	if _, err := m.ForwardPacked(PackedBatch{B: 1, T: T, IDs: ids, Positions: pos, Allowed: allowed, Row: row, Src: src, Tgt: tgt},
		ForwardOptions{}); err == nil || !strings.Contains(err.Error(), "not a prefix tree") {
		t.Fatalf("a mask that is not a prefix tree: %v", err)
	}
}

// The float64 training forward's gradients of a Qwen3.5 (qwen35Config,
// weights drawn at 0.2) match central finite differences of
// S = sum of logprobs to a relative 1e-6, with and without activation
// checkpointing, over a row of 70 tokens (the chunked DeltaNet form over
// two chunks of 64) and a right-padded row of 20: for one entry of every
// kind of parameter (the largest gradient's): the DeltaNet's A_log,
// dt_bias, conv1d, gated norm and five projections, the gated attention's
// q_proj, k_proj, v_proj, o_proj and q/k norms, the layer norms, the MLP,
// the embeddings and the LM head. At h = 2e-6 the truncation error (h^2
// times the third derivative: in_proj_qkv's entry, the most curved, is
// off by 1e-6 at h = 1e-5 and by 4e-8 at 2e-6) and the rounding error
// (1e-16 |S| / h, |S| ~ 500: 2.5e-8 of gradients of 1 and more) stay
// below 1e-7; measured at most 6e-8. (transformers' float64 forward runs
// the delta rule, its norms and RoPE in float32: our f64 gradients differ
// from its autograd's by as much as our f32 ones, 1.6e-5 measured, so
// this is the tighter check.)
func TestQwen35GradientsFiniteDifferences(t *testing.T) {
	m, err := NewRandomModel(qwen35Config(), Float64, CPU, false, 7)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if err := m.InitRandom(7, 0.2); err != nil {
		t.Fatal(err)
	}
	const T = 70
	b := Batch{B: 2, T: T, IDs: append(seq(T, 11), seq(T, 12)...)}
	for r := range 2 {
		for p := range T {
			attn := int64(1)
			if r == 1 && p >= 20 {
				attn = 0
			}
			b.Attn, b.Positions = append(b.Attn, attn), append(b.Positions, int64(p))
		}
	}
	names := []string{"model.embed_tokens.weight", "lm_head.weight", "model.norm.weight",
		"model.layers.0.input_layernorm.weight", "model.layers.0.linear_attn.A_log", "model.layers.1.linear_attn.dt_bias",
		"model.layers.0.linear_attn.conv1d.weight", "model.layers.2.linear_attn.norm.weight",
		"model.layers.0.linear_attn.in_proj_qkv.weight", "model.layers.1.linear_attn.in_proj_z.weight",
		"model.layers.2.linear_attn.in_proj_b.weight", "model.layers.0.linear_attn.in_proj_a.weight",
		"model.layers.1.linear_attn.out_proj.weight", "model.layers.3.self_attn.q_proj.weight",
		"model.layers.3.self_attn.k_proj.weight", "model.layers.3.self_attn.v_proj.weight",
		"model.layers.3.self_attn.o_proj.weight", "model.layers.3.self_attn.q_norm.weight",
		"model.layers.3.self_attn.k_norm.weight", "model.layers.3.post_attention_layernorm.weight",
		"model.layers.2.mlp.gate_proj.weight", "model.layers.3.mlp.down_proj.weight"}
	for _, ckpt := range []bool{false, true} {
		t.Run(fmt.Sprintf("checkpointing %v", ckpt), func(t *testing.T) {
			if err := m.SetCheckpointing(ckpt); err != nil {
				t.Fatal(err)
			}
			g := lossGrads(t, m, b)
			worst := 0.0
			for _, name := range names {
				vals, shape := paramF64(t, m, name)
				top := 0
				for i, v := range g[name] {
					if math.Abs(v) > math.Abs(g[name][top]) {
						top = i
					}
				}
				const h = 2e-6
				orig := vals[top]
				vals[top] = orig + h
				setF64(t, m, name, vals, shape)
				up := lossValue(t, m, b)
				vals[top] = orig - h
				setF64(t, m, name, vals, shape)
				dn := lossValue(t, m, b)
				vals[top] = orig
				setF64(t, m, name, vals, shape)
				fd := (up - dn) / (2 * h)
				rel := math.Abs(g[name][top]-fd) / math.Max(math.Abs(fd), 1e-3)
				worst = math.Max(worst, rel)
				if rel > 1e-6 {
					t.Errorf("dS/d %s[%d] = %v, finite difference %v (relative error %.2g)", name, top, g[name][top], fd, rel)
				}
			}
			t.Logf("largest relative error: %.2g", worst)
		})
	}
}
