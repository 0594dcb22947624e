package dryrun

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/internal/fixtures"
)

// The Qwen3.5-9B example's dry run, with a folder holding the model's
// config.json (fixtures.Qwen35Dense9BConfig, the multimodal form) and the
// Qwen tokenizer with Qwen3.5's chat template for /models (no weights: the
// dry run reads none), on cuda:0 in bf16 as shipped.
//
// Its parameters by hand, from the shapes of transformers' Qwen3.5 text
// model: the embeddings and the untied LM head, 248,320 x 4096 each; per
// layer two RMSNorms of 4096 and the SwiGLU MLP 3 x 4096 x 12,288; per
// gated attention layer (8: layers 3, 7, ..., 31) q_proj 4096 x 2 x 16 x 256
// (the query and its gate), k_proj and v_proj 4096 x 4 x 256, o_proj
// 16 x 256 x 4096, q_norm and k_norm 256; per Gated DeltaNet layer (the
// other 24) in_proj_qkv 4096 x (2 x 16 x 128 + 32 x 128), in_proj_z
// 4096 x 32 x 128, in_proj_a and in_proj_b 4096 x 32, the depthwise conv
// 8192 channels x 4, dt_bias and A_log 32, the gated norm 128, out_proj
// 32 x 128 x 4096; and the final norm.
//
// What the decode engine of 64 slots of 2049 positions holds, by hand: the
// 8 attention layers' keys and values, 2 x 4 x 256 bf16 numbers per
// position; the 24 DeltaNet layers', whatever the length, a conv state of
// the last 3 inputs of its 8192 channels (bf16) and a recurrent state of
// 32 heads of 128 x 128 (float32).
func TestDryRunQwen35Example(t *testing.T) {
	dir := exampleModelDir(t, "Qwen3.5-9B", fixtures.Qwen35Dense9BConfig, "tokenizer.json")
	tokDir := fixtures.Path(t, "data", "tokenizers", "qwen")
	var tc map[string]any
	b, err := os.ReadFile(filepath.Join(tokDir, "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &tc); err != nil {
		t.Fatal(err)
	}
	template, err := os.ReadFile(filepath.Join("..", "..", "tokenizer", "qwen35_chat_template.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	tc["chat_template"] = string(template)
	if b, err = json.Marshal(tc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	index := fixtureIndex(t)

	const (
		embed  = int64(248320 * 4096)
		common = int64(3*4096*12288 + 2*4096)
		attn   = int64(4096*2*16*256 + 2*4096*4*256 + 16*256*4096 + 2*256)
		delta  = int64(4096*(2*16*128+32*128) + 4096*32*128 + 2*4096*32 + (2*16*128+32*128)*4 + 2*32 + 128 + 32*128*4096)
		params = 2*embed + 8*(attn+common) + 24*(delta+common) + 4096
		kv     = int64(8 * 64 * 2049 * 2 * 4 * 256 * 2)
		state  = int64(24 * 64 * ((2*16*128+32*128)*3*2 + 32*128*128*4))
		// The checkpointed activations: each layer's input (32 x 2048 x
		// 4096 bf16 numbers), twice the largest layer's (a DeltaNet layer's,
		// in float32: per token 6 x 4096 + 3 x 8192 + 4 x 32 + 10 x 4096 +
		// 11 x 4096 + 7 x 32 x 64 + 4 x 12,288, and its state at each of the
		// 32 chunks' starts, 32 x 128 x 128), SDPA's additive mask (16/4
		// heads a group, 2048 x 2048, bf16), and the chunked LM head (two
		// 256-token chunks in float32, the hidden states' and the head's
		// gradients in bf16).
		deltaLayer = int64((2048*(6*4096+3*8192+4*32+10*4096+11*4096+7*32*64+4*12288) + 32*32*128*128) * 4)
		acts       = int64(32*2048*4096*2) + 2*deltaLayer + int64(4*2048*2048*2) + int64(2*256*248320*4+2048*4096*2) + embed*2
	)
	for _, c := range []struct{ nproc, zero int }{{1, 0}, {8, 2}} {
		cfg := exampleOnFixtures(t, "qwen3.5-9b-hotpotqa-grpo.yaml", dir, index)
		cfg.Dist.NProc, cfg.Dist.Zero = c.nproc, c.zero
		r, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("dry run: %v", err)
		}
		m := r.Memory
		t.Logf("nproc %d zero %d: %d params; total %.1fe9 (weights %.1fe9, grads %.1fe9, optimizer %.1fe9, reference %.1fe9, kv %.2fe9, deltanet state %.2fe9, activations %.1fe9)",
			c.nproc, c.zero, r.Params, float64(m.Total)/1e9, float64(m.Weights)/1e9, float64(m.Grads)/1e9, float64(m.Optimizer)/1e9,
			float64(m.Reference)/1e9, float64(m.KVCache)/1e9, float64(m.DeltaNetState)/1e9, float64(m.Activations)/1e9)
		if r.Model.ModelType != "qwen3_5_text" || r.Params != params || m.Weights != 2*params {
			t.Errorf("%s: params %d, weights %d bytes; want qwen3_5_text, %d and twice that", r.Model.ModelType, r.Params, m.Weights, params)
		}
		if m.KVCache != kv || m.DeltaNetState != state || m.Activations != acts {
			t.Errorf("kv cache %d, deltanet state %d, activations %d; want %d, %d, %d", m.KVCache, m.DeltaNetState, m.Activations, kv, state, acts)
		}
		// bf16: gradients 6 and AdamW's state 12 bytes a parameter (divided
		// by the ranks under ZeRO-2), and a reference copy.
		if want := 2*params + 6*params/int64(c.nproc) + 12*params/int64(c.nproc) + 2*params + kv + state + acts; m.Total != want {
			t.Errorf("total %d, want %d", m.Total, want)
		}
		wantWarning(t, r.Warnings, "Gated DeltaNet", "decode kernels")
	}
}
