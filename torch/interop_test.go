package torch

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
	"github.com/agentrl/agentrl/torch/safetensors"
)

// hfModel is one model for testdata/interop/hf_model.py to make with
// transformers' own classes and save_pretrained (see the script for the
// fields).
type hfModel struct {
	Dir          string         `json:"dir"`
	Family       string         `json:"family"`
	Config       map[string]any `json:"config"`
	Vision       map[string]any `json:"vision,omitempty"`
	Style        string         `json:"style"`
	MaxShardSize string         `json:"max_shard_size"`
	Seed         int            `json:"seed"`
	RefDType     string         `json:"ref_dtype"`
	RefAttn      string         `json:"ref_attn,omitempty"` // the reference's attn_implementation (hf_model.py; default eager)
	Full         []int          `json:"full"`
	Explicit     bool           `json:"explicit"`
	Decode       []int          `json:"decode"`
	Steps        int            `json:"steps"`
	Fused        bool           `json:"fused,omitempty"` // the experts saved fused (hf_model.py)
	// ExplicitStart moves the explicit position ids case (hf_model.py).
	ExplicitStart int `json:"explicit_start,omitempty"`
	// Ref32 adds transformers' float32 logits to each full case.
	Ref32 bool `json:"ref32,omitempty"`
}

// hfMade is what the script says of the models it made.
type hfMade struct {
	Models []struct {
		Config map[string]any `json:"config"`
		Files  []string       `json:"files"`
	} `json:"models"`
	Transformers string `json:"transformers"`
	Torch        string `json:"torch"`
}

// llama3Rope is a Llama 3 RoPE scaling whose three bands all show within a
// few dozen positions at head_dim 16: with theta 10000 the wavelengths are
// 6.3 (kept), 20 (between original/high = 8 and original/low = 32:
// smoothed) and 63 and beyond (divided by the factor).
var llama3Rope = map[string]any{"rope_type": "llama3", "rope_theta": 10000.0, "factor": 4.0,
	"low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 32}

// smallShapes are each family's small model: head_dim 16 or 32 so that
// the decode kernels run, weights drawn wider than transformers' 0.02 so
// that attention is far from uniform and RoPE shows in the logits, a RoPE
// base that is not the default 10000 (or Llama 3's scaling).
func smallShapes(family string) map[string]any {
	c := map[string]any{"vocab_size": 384, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
		"num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 512, "rms_norm_eps": 1e-6,
		"initializer_range": 0.1, "bos_token_id": 1, "eos_token_id": 2}
	switch family {
	case "qwen2":
		c["rope_parameters"] = map[string]any{"rope_type": "default", "rope_theta": 1e6}
		c["tie_word_embeddings"] = false
	case "qwen3":
		c["head_dim"] = 32 // not hidden / heads
		c["rope_parameters"] = map[string]any{"rope_type": "default", "rope_theta": 1e6}
		c["tie_word_embeddings"] = true
	case "llama":
		c["rope_parameters"] = llama3Rope
		c["tie_word_embeddings"] = true
	}
	return c
}

// realShapes are each family's published model at its real depth, width
// and vocabulary (Qwen2.5-0.5B, Qwen3-0.6B, Llama-3.2-1B, Qwen3.5-0.8B),
// with their RoPE settings and random weights.
var realShapes = map[string]map[string]any{
	"qwen2": {"vocab_size": 151936, "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
		"num_attention_heads": 14, "num_key_value_heads": 2, "max_position_embeddings": 32768, "rms_norm_eps": 1e-6,
		"rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 1e6}, "tie_word_embeddings": true,
		"bos_token_id": 151643, "eos_token_id": 151643},
	"qwen3": {"vocab_size": 151936, "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
		"num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "max_position_embeddings": 40960,
		"rms_norm_eps": 1e-6, "rope_parameters": map[string]any{"rope_type": "default", "rope_theta": 1e6},
		"tie_word_embeddings": true, "bos_token_id": 151643, "eos_token_id": 151645},
	"llama": {"vocab_size": 128256, "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
		"num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64, "max_position_embeddings": 131072,
		"rms_norm_eps": 1e-5, "rope_parameters": map[string]any{"rope_type": "llama3", "rope_theta": 500000.0,
			"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
		"tie_word_embeddings": true, "bos_token_id": 128000, "eos_token_id": 128001},
	// Qwen3.5-0.8B's text_config as published (Qwen/Qwen3.5-0.8B's
	// config.json): 24 layers, three Gated DeltaNet layers to one gated
	// attention layer, 16 key and value heads of 128 in the DeltaNet
	// layers, head_dim 256 with a quarter turned by RoPE.
	"qwen3_5": {"vocab_size": 248320, "hidden_size": 1024, "intermediate_size": 3584, "num_hidden_layers": 24,
		"num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256, "max_position_embeddings": 262144,
		"rms_norm_eps": 1e-6, "full_attention_interval": 4, "linear_conv_kernel_dim": 4,
		"linear_key_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 16, "linear_value_head_dim": 128,
		"rope_parameters": map[string]any{"mrope_interleaved": true, "mrope_section": []int{11, 11, 10},
			"rope_type": "default", "rope_theta": 1e7, "partial_rotary_factor": 0.25},
		"tie_word_embeddings": true, "eos_token_id": 248044},
}

// qwen35RealVision is Qwen3.5-0.8B's vision_config as published.
var qwen35RealVision = map[string]any{"depth": 12, "hidden_act": "gelu_pytorch_tanh", "hidden_size": 768,
	"in_channels": 3, "intermediate_size": 3072, "num_heads": 12, "num_position_embeddings": 2304,
	"out_hidden_size": 1024, "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2,
	"deepstack_visual_indexes": []int{}}

// interopParity makes models with transformers (one Python run) and holds
// agentrl to each with fixtureParity: logits, the training forward's
// logprobs, and greedy decoding on every decode path against transformers'
// forward and generate, within 1e-4 in f32. It logs one row of the
// results table (model, config style, save, check, largest difference)
// per check.
func interopParity(t *testing.T, models []hfModel, names []string) {
	var made hfMade
	pyinterop.Run(t, "testdata/interop/hf_model.py", map[string]any{"models": models}, &made)
	t.Logf("made with transformers %s, torch %s", made.Transformers, made.Torch)
	for i, hm := range models {
		t.Run(names[i], func(t *testing.T) {
			checkStyle(t, hm, made.Models[i].Config, made.Models[i].Files)
			worst := fixtureParity(t, hm.Dir)
			save := "single file"
			if hm.MaxShardSize != "" {
				save = "sharded"
			}
			for _, check := range []string{"logits", "forward", "kernels", "fused", "unfused"} {
				if d, ok := worst[check]; ok {
					t.Logf("| %s | %s.x | %s | %s | %.1e |", names[i], hm.Style, save, check, d)
				}
			}
		})
	}
}

// checkStyle fails when the folder is not in the form the case is about:
// the 5.x form has rope_parameters and dtype and no rope_theta; the 4.x
// form the opposite; a sharded save has an index and several files.
func checkStyle(t *testing.T, hm hfModel, cfg map[string]any, files []string) {
	t.Helper()
	rcfg := cfg // where the RoPE keys are: a multimodal Qwen3.5's text_config
	if tc, ok := cfg["text_config"].(map[string]any); ok {
		rcfg = tc
	}
	_, rp := rcfg["rope_parameters"]
	_, theta := rcfg["rope_theta"]
	_, dtype := cfg["dtype"]
	_, tdtype := cfg["torch_dtype"]
	if hm.Style == "5" && (!rp || theta || !dtype || tdtype) || hm.Style == "4" && (rp || !theta || dtype || !tdtype) {
		t.Fatalf("config.json is not in the %s.x form: %v", hm.Style, cfg)
	}
	shards := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".safetensors") {
			shards++
		}
	}
	if index := slices.Contains(files, "model.safetensors.index.json"); (hm.MaxShardSize != "") != (index && shards > 1) {
		t.Fatalf("files %v: want sharded %v", files, hm.MaxShardSize != "")
	}
}

// Models made by transformers 5 (save_pretrained) of every supported
// family, small, in both config forms (transformers 5's rope_parameters and
// dtype as written; transformers 4's rope_theta, rope_scaling and
// torch_dtype), saved in one file and sharded: Qwen2 and Qwen3 with RoPE
// base 1e6, Qwen3 with head_dim 32 where hidden / heads is 16, Llama with
// Llama 3's RoPE scaling. The reference is transformers' forward and
// generate in float64.
func TestInteropTransformersModels(t *testing.T) {
	pyinterop.Python(t)
	var models []hfModel
	var names []string
	root := t.TempDir()
	seed := 1
	for _, family := range []string{"qwen2", "qwen3", "llama"} {
		for _, style := range []string{"5", "4"} {
			for _, shard := range []string{"", "100KB"} {
				name := fmt.Sprintf("%s-small-%s.x", family, style)
				if shard != "" {
					name += "-sharded"
				}
				models = append(models, hfModel{Dir: filepath.Join(root, name), Family: family, Config: smallShapes(family),
					Style: style, MaxShardSize: shard, Seed: seed, RefDType: "float64",
					Full: []int{24, 17, 3}, Explicit: true, Decode: []int{9, 1, 30}, Steps: 6})
				names = append(names, name)
				seed++
			}
		}
	}
	interopParity(t, models, names)
}

// Each family at its published shape (Qwen2.5-0.5B, Qwen3-0.6B,
// Llama-3.2-1B, Qwen3.5-0.8B: real depth, width and vocabulary, random
// weights) made by transformers 5, in its 5.x form (Qwen2.5 sharded, Llama
// in the 4.x form: rope_scaling llama3; Qwen3.5 as the conditional-
// generation class saves it, its vision tower included, plus mtp.*
// tensors), against transformers' forward and generate in float32. The
// Qwen3.5 rows of 12 and 5 tokens run the chunked DeltaNet form over one
// chunk; TestInteropQwen35 crosses chunks at a small shape.
func TestInteropTransformersRealShapes(t *testing.T) {
	pyinterop.Python(t)
	root := t.TempDir()
	var models []hfModel
	var names []string
	for i, c := range []struct {
		family, name, style, shard string
		config, vision             map[string]any
	}{
		{"qwen2", "Qwen2.5-0.5B", "5", "500MB", realShapes["qwen2"], nil},
		{"qwen3", "Qwen3-0.6B", "5", "", realShapes["qwen3"], nil},
		{"llama", "Llama-3.2-1B", "4", "", realShapes["llama"], nil},
		{"qwen3_5_vl", "Qwen3.5-0.8B", "5", "", realShapes["qwen3_5"], qwen35RealVision},
	} {
		models = append(models, hfModel{Dir: filepath.Join(root, c.name), Family: c.family, Config: c.config, Vision: c.vision,
			Style: c.style, MaxShardSize: c.shard, Seed: 100 + i, RefDType: "float32",
			Full: []int{12, 5}, Decode: []int{7}, Steps: 3})
		names = append(names, c.name)
	}
	interopParity(t, models, names)
}

// packRows packs the rows of the right-padded case c one after the other
// into one row (each attending only within itself, positions from 0, two
// padding tokens after them) with every real next token of each row a
// target, and returns the batch and log softmax of the case's logits at
// the targets, in order.
func packRows(c fixtureCase) (PackedBatch, []float64) {
	var ids, pos, starts, lens []int64
	for b, row := range c.InputIDs {
		n := 0
		for _, a := range c.AttentionMask[b] {
			n += int(a)
		}
		starts = append(starts, int64(len(ids)))
		lens = append(lens, int64(n))
		ids = append(ids, row[:n]...)
		pos = append(pos, c.PositionIDs[b][:n]...)
	}
	real := int64(len(ids))
	ids, pos = append(ids, 0, 0), append(pos, 0, 0)
	T := len(ids)
	pb := PackedBatch{B: 1, T: T, IDs: ids, Positions: pos, Allowed: make([]uint8, T*T), Lens: []int64{real}}
	for i := range T {
		pb.Allowed[i*T+i] = 1
	}
	var want []float64
	for b, s := range starts {
		for i := range lens[b] {
			for j := range i {
				pb.Allowed[(s+i)*int64(T)+s+j] = 1
			}
			if i+1 < lens[b] {
				pb.Row, pb.Src, pb.Tgt = append(pb.Row, 0), append(pb.Src, s+i), append(pb.Tgt, c.InputIDs[b][i+1])
				want = append(want, logSoftmax64At(c.Logits[b][i], c.InputIDs[b][i+1]))
			}
		}
	}
	return pb, want
}

// holdGradients holds the gradient of every parameter of m to the one
// the safetensors file grads holds under its name (transformers'
// autograd) within tol, in float64 (with scaled, within tol times the
// largest entry of transformers' gradient where that exceeds 1), and
// returns the largest difference. A parameter without a gradient counts
// as zeros (no token chose that expert). Every gradient equal to the bit
// fails: the check would compare nothing.
func holdGradients(t *testing.T, m *Model, grads string, tol float64, scaled bool) float64 {
	t.Helper()
	r, err := safetensors.Open(grads)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	worst := 0.0
	for _, name := range m.Names() {
		if strings.HasSuffix(name, ".layer_scalar") || strings.HasSuffix(name, ".e_score_correction_bias") {
			continue // Gemma 4's and Nemotron-H's router's: buffers in transformers, not trained
		}
		want, err := float64sOf(r, name)
		if err != nil {
			t.Fatalf("transformers has no gradient for %s: %v", name, err)
		}
		p, err := m.Param(name)
		if err != nil {
			t.Fatal(err)
		}
		g, err := p.Grad()
		p.Free()
		if err != nil {
			t.Fatal(err)
		}
		got := make([]float64, len(want))
		if g != nil {
			got, _ = g.Float64s()
			g.Free()
		}
		if len(got) != len(want) {
			t.Fatalf("gradient of %s: %d values, transformers' %d", name, len(got), len(want))
		}
		d, mx := 0.0, 0.0
		for i := range want {
			d = math.Max(d, math.Abs(got[i]-want[i]))
			mx = math.Max(mx, math.Abs(want[i]))
		}
		worst = math.Max(worst, d)
		limit := tol
		if scaled {
			limit *= math.Max(1, mx)
		}
		if d > limit {
			t.Errorf("gradient of %s differs from transformers' by %g (largest entry %g)", name, d, mx)
		}
	}
	if worst == 0 {
		t.Error("every gradient is equal to transformers' to the bit: the check compares nothing")
	}
	return worst
}

// float64sOf reads tensor name of r as float64 values: an F64 tensor
// exactly, another float dtype through Float32s.
func float64sOf(r *safetensors.Reader, name string) ([]float64, error) {
	info, ok := r.Info(name)
	if !ok {
		return nil, fmt.Errorf("no tensor %q", name)
	}
	if info.DType != safetensors.F64 {
		f, err := r.Float32s(name)
		out := make([]float64, len(f))
		for i, v := range f {
			out[i] = float64(v)
		}
		return out, err
	}
	raw, err := r.Bytes(name)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(raw)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
	}
	return out, nil
}
