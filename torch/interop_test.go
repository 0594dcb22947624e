package torch

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/pyinterop"
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
	Full         []int          `json:"full"`
	Explicit     bool           `json:"explicit"`
	Decode       []int          `json:"decode"`
	Steps        int            `json:"steps"`
	Fused        bool           `json:"fused,omitempty"` // the experts saved fused (hf_model.py)
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
// and vocabulary (Qwen2.5-0.5B, Qwen3-0.6B, Llama-3.2-1B), with their RoPE
// settings and random weights.
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
}

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
// Llama-3.2-1B: real depth, width and vocabulary, random weights) made by
// transformers 5, in its 5.x form (Qwen2.5 sharded, Llama in the 4.x form:
// rope_scaling llama3), against transformers' forward and generate in
// float32.
func TestInteropTransformersRealShapes(t *testing.T) {
	pyinterop.Python(t)
	root := t.TempDir()
	var models []hfModel
	var names []string
	for i, c := range []struct{ family, name, style, shard string }{
		{"qwen2", "Qwen2.5-0.5B", "5", "500MB"},
		{"qwen3", "Qwen3-0.6B", "5", ""},
		{"llama", "Llama-3.2-1B", "4", ""},
	} {
		models = append(models, hfModel{Dir: filepath.Join(root, c.name), Family: c.family, Config: realShapes[c.family],
			Style: c.style, MaxShardSize: c.shard, Seed: 100 + i, RefDType: "float32",
			Full: []int{12, 5}, Decode: []int{7}, Steps: 3})
		names = append(names, c.name)
	}
	interopParity(t, models, names)
}
