package trainer

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/internal/fixtures"
	"github.com/agentrl/agentrl/trainer/config"
)

// The Qwen3-30B-A3B example's dry run, with a folder holding the model's
// published config.json and the Qwen tokenizer for /models (no weights:
// the dry run reads none), on cuda:0 in bf16 as shipped: every expert's parameters are
// counted (30,532,122,624 by hand: embeddings and LM head 2 x 151936 x
// 2048; per layer attention 18,874,368, norms 4352, router 128 x 2048 and
// experts 128 x 3 x 768 x 2048; the final norm), the weights are two bytes
// each, and the report says the decode kernels are dense-only.
func TestDryRunQwen3MoEExample(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "Qwen3-30B-A3B")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(fixtures.Qwen3MoE30BConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	tokDir := fixtures.Path(t, "data", "tokenizers", "qwen")
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		copyTestFile(t, filepath.Join(tokDir, f), filepath.Join(dir, f))
	}
	raw := func(rel ...string) string { return fixtures.Path(t, append([]string{"data", "raw"}, rel...)...) }
	index := buildExampleIndex(t, raw("hotpotqa", "hotpotqa_train_corpus.json"))
	const params = int64(2*151936*2048 + 48*(18874368+4352+128*2048+128*3*768*2048) + 2048)
	for _, c := range []struct{ nproc, zero int }{{1, 0}, {8, 2}} {
		cfg, err := config.Load(filepath.Join("..", "examples", "qwen3-30b-a3b-hotpotqa-grpo.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Model.Path = dir
		cfg.Data.Train = []string{raw("hotpotqa", "hotpotqa_train.json")}
		cfg.Data.Eval = []string{raw("musique", "gold_with_3_distractors_context_cot_qa_codex.txt")}
		cfg.Tools.Search.Index = index
		cfg.Dist.NProc, cfg.Dist.Zero = c.nproc, c.zero
		cfg.Run.Dir = t.TempDir()
		r, err := DryRun(context.Background(), cfg)
		if err != nil {
			t.Fatalf("dry run: %v", err)
		}
		m := r.Memory
		t.Logf("nproc %d zero %d: %d params; total %.1fe9 (weights %.1fe9, grads %.1fe9, optimizer %.1fe9, reference %.1fe9, kv %.1fe9, activations %.1fe9, checkpoint %.1fe9)",
			c.nproc, c.zero, r.Params, float64(m.Total)/1e9, float64(m.Weights)/1e9, float64(m.Grads)/1e9, float64(m.Optimizer)/1e9,
			float64(m.Reference)/1e9, float64(m.KVCache)/1e9, float64(m.Activations)/1e9, float64(m.Checkpoint)/1e9)
		if r.Params != params || m.Weights != 2*params {
			t.Errorf("params %d, weights %d bytes; want %d and twice that", r.Params, m.Weights, params)
		}
		// The figures the example's comment quotes, by hand: gradients 6
		// and optimizer state 12 bytes a parameter (divided by 8 under
		// ZeRO-2), a reference copy, the KV cache 2 x 48 layers x 64 slots
		// x 2049 positions x 512 x 2 bytes, and the checkpointed
		// activations: each layer's input, two sparse layers' worth (per
		// token 10 x 2048 + 6 x 512 + 4 x 8 x 768 + 2 x 8 x 2048 + 2 x 128 +
		// 32 x 2048 floats) and the chunked LM head (two 256-token chunks,
		// the hidden states, the head's gradient).
		acts := int64(48*2048*2048*4 + 2*(10*2048+6*512+4*8*768+2*8*2048+2*128+32*2048)*2048*4 +
			2*256*151936*4 + 2048*2048*4 + 151936*2048*4)
		kv := int64(2 * 48 * 64 * 2049 * 512 * 2)
		want := 2*params + 6*params/int64(c.nproc) + 12*params/int64(c.nproc) + 2*params + kv + acts
		if m.Activations != acts || m.KVCache != kv || m.Total != want {
			t.Errorf("activations %d, kv cache %d, total %d; want %d, %d, %d", m.Activations, m.KVCache, m.Total, acts, kv, want)
		}
		wantWarning(t, r.Warnings, "mixture-of-experts", "decode kernels")
	}
}
