package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/torch"
)

// qwen35ConfigJSON is a small Qwen3.5 text model's config.json: three Gated
// DeltaNet layers and one gated attention layer, tied embeddings.
const qwen35ConfigJSON = `{"model_type": "qwen3_5_text", "architectures": ["Qwen3_5ForCausalLM"],
 "vocab_size": 97, "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 4,
 "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "rms_norm_eps": 1e-6,
 "max_position_embeddings": 64, "tie_word_embeddings": true,
 "layer_types": ["linear_attention", "linear_attention", "linear_attention", "full_attention"],
 "linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 8,
 "linear_conv_kernel_dim": 4,
 "rope_parameters": {"rope_type": "default", "rope_theta": 10000000, "partial_rotary_factor": 0.25}}`

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A tied model's LM head is the embedding matrix, read whole every step:
// the same bytes as the untied model's head plus its batch rows (75392,
// by hand in TestGenerateTiny).
func TestGenerateTiedCountsTheHead(t *testing.T) {
	cfg := tiny()
	cfg.Tied, cfg.Repeats, cfg.BandwidthGBs = true, 1, 10
	r, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.WeightBytesPerStep != 75392 {
		t.Errorf("tied: weight_bytes_per_step %d, want 75392", r.WeightBytesPerStep)
	}
}

// Config.Model builds the architecture of a config.json (Qwen3.5 here):
// the result's shape fields are the file's, the weights read per step are
// the hybrid model's, counted by hand, and the update runs on it, in full
// and with LoRA on all its projections.
func TestModelFromConfig(t *testing.T) {
	cfg := tiny()
	cfg.Vocab, cfg.Hidden, cfg.Layers = 0, 0, 0 // the file gives the shape
	cfg.Model, cfg.Repeats, cfg.BandwidthGBs = writeConfig(t, qwen35ConfigJSON), 1, 10
	r, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c := r.Config; c.Vocab != 97 || c.Hidden != 32 || c.Inter != 48 || c.Layers != 4 || c.Heads != 4 || c.KVHeads != 2 || !c.Tied {
		t.Errorf("config %+v, want the file's shape", c)
	}
	// By hand, f32: a DeltaNet layer is in_proj_qkv (2*2*8 + 4*8) x 32 =
	// 2048, in_proj_z 32*32 = 1024, in_proj_b and in_proj_a 4*32 each, the
	// conv 64 channels x 4 taps = 256, dt_bias and A_log 4 each, the gated
	// norm 8, out_proj 32*32 = 1024: 4624, plus two norms 64 and the MLP
	// 3*32*48 = 4608: 9296, three of them 27888. The attention layer: q_proj
	// (query and gate) 2*4*16 x 32 = 4096, k and v 2*16*32 each, o 32*64 =
	// 2048, q/k norms 16 each: 8224, plus 64 and 4608: 12896. The final norm
	// 32, the tied head 97*32 = 3104, the batch's 3 embedding rows 96:
	// 44016 values, 176064 bytes.
	if r.WeightBytesPerStep != 176064 {
		t.Errorf("weight_bytes_per_step %d, want 176064", r.WeightBytesPerStep)
	}
	if strings.HasPrefix(r.DecodePath, "kernels") || !strings.Contains(r.NoKernels, "Gated DeltaNet") {
		t.Errorf("decode_path %q (no_kernels %q): the CPU kernels run attention-only models", r.DecodePath, r.NoKernels)
	}
	tr := cfg
	tr.Batch = 4
	rt, err := Train(tr)
	if err != nil {
		t.Fatal(err)
	}
	if !(rt.TokensPerS > 0) || rt.Config.Vocab != 97 {
		t.Errorf("train: %+v", rt)
	}
	// LoRA r 2 on all it has: the twelve targets. By hand: a DeltaNet
	// layer's in_proj_qkv 2 (32 + 64), in_proj_z 2 (32 + 32), in_proj_b and
	// in_proj_a 2 (32 + 4) each, out_proj 2 (32 + 32): 592; the attention
	// layer's q 2 (32 + 128), k and v 2 (32 + 32) each, o 2 (64 + 32): 768;
	// each MLP 3 * 2 (32 + 48) = 480. 3 (592 + 480) + 768 + 480 = 4464.
	tr.LoRARank = 2
	rl, err := Train(tr)
	if err != nil {
		t.Fatal(err)
	}
	if rl.TrainableParams != 4464 || len(rl.Config.LoRATargets) != 12 {
		t.Errorf("LoRA on a Qwen3.5: trainable_params %d (want 4464), targets %v", rl.TrainableParams, rl.Config.LoRATargets)
	}
}

// A file that is not a model config, and a mixture of experts in generate,
// are refused by name.
func TestModelRefusals(t *testing.T) {
	cfg := tiny()
	cfg.Repeats = 1
	cfg.Model = writeConfig(t, `{"model_type": "gpt2"}`)
	if _, err := Generate(cfg); err == nil || !strings.Contains(err.Error(), "gpt2") {
		t.Errorf("gpt2 config: %v", err)
	}
	cfg.Model = writeConfig(t, `{"model_type": "qwen3_moe", "vocab_size": 97, "hidden_size": 32, "intermediate_size": 48,
 "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "num_experts": 4,
 "num_experts_per_tok": 2, "moe_intermediate_size": 16, "max_position_embeddings": 64}`)
	if _, err := Generate(cfg); err == nil || !strings.Contains(err.Error(), "qwen3_moe model is not benchmarked") {
		t.Errorf("MoE config: %v", err)
	}
	rc := DefaultRollout()
	rc.Model.Model = cfg.Model
	if _, err := Rollout(rc); err == nil || !strings.Contains(err.Error(), "bench rollout: model") {
		t.Errorf("rollout with a model: %v", err)
	}
}

// The published configs under configs/ (the --model files of
// docs/benchmarks.md) load, with their published sizes, counted by hand.
func TestPublishedConfigs(t *testing.T) {
	for file, want := range map[string]int64{
		// Qwen3-0.6B: embedding 151936*1024 = 155,582,464 (tied); a layer
		// is q 2048x1024, k and v 1024x1024, o 1024x2048, q/k norms 128
		// each, the MLP 3*1024*3072, two norms 1024: 15,730,944; 28 of
		// them, the final norm 1024: 596,049,920.
		"Qwen3-0.6B.json": 596049920,
		// Qwen3.5-0.8B's text model: embedding 248320*1024 = 254,279,680
		// (tied). A DeltaNet layer: in_proj_qkv (2*16*128 + 16*128) x 1024
		// = 6,291,456, in_proj_z 2048x1024, in_proj_a and in_proj_b 16x1024
		// each, the conv 6144*4, dt_bias and A_log 16 each, the gated norm
		// 128, out_proj 1024x2048: 10,543,264; with two norms and the MLP
		// (3*1024*3584): 21,555,360, 18 of them. An attention layer: q
		// (query and gate) 4096x1024, k and v 512x1024, o 1024x2048, q/k
		// norms 256 each: 7,340,544; with norms and MLP 18,352,640, 6 of
		// them. With the final norm: 752,393,024.
		"Qwen3.5-0.8B.json": 752393024,
	} {
		mc, err := readModelConfig(filepath.Join("configs", file))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		shapes, err := torch.ParamShapes(mc, false)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var n int64
		for _, p := range shapes {
			n += p.Numel()
		}
		if n != want {
			t.Errorf("%s: %d parameters, want %d", file, n, want)
		}
	}
}
