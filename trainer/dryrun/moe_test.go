package dryrun

import (
	"context"
	"strings"
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
	dir := exampleModelDir(t, "Qwen3-30B-A3B", fixtures.Qwen3MoE30BConfig, "tokenizer.json", "tokenizer_config.json")
	index := fixtureIndex(t)
	const params = int64(2*151936*2048 + 48*(18874368+4352+128*2048+128*3*768*2048) + 2048)
	for _, c := range []struct{ nproc, zero int }{{1, 0}, {8, 2}} {
		cfg := exampleOnFixtures(t, "qwen3-30b-a3b-hotpotqa-grpo.yaml", dir, index)
		cfg.Dist.NProc, cfg.Dist.Zero = c.nproc, c.zero
		r, err := Run(context.Background(), cfg)
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
		// activations in bf16 under SDPA: each layer's input, two sparse
		// layers' worth (per token 10 x 2048 + 6 x 512 + 4 x 8 x 768 +
		// 2 x 8 x 2048 + 2 x 128 numbers and a float32 log-sum-exp per
		// head, 32), the additive mask (32/4 heads a group, 2048 x 2048),
		// and the chunked LM head (two 256-token chunks in float32, the
		// hidden states' and the head's gradients).
		acts := int64(48*2048*2048*2 + 2*((10*2048+6*512+4*8*768+2*8*2048+2*128)*2+32*4)*2048 + 8*2048*2048*2 +
			2*256*151936*4 + 2048*2048*2 + 151936*2048*2)
		kv := int64(2 * 48 * 64 * 2049 * 512 * 2)
		want := 2*params + 6*params/int64(c.nproc) + 12*params/int64(c.nproc) + 2*params + kv + acts
		if m.Activations != acts || m.KVCache != kv || m.Total != want {
			t.Errorf("activations %d, kv cache %d, total %d; want %d, %d, %d", m.Activations, m.KVCache, m.Total, acts, kv, want)
		}
		wantWarning(t, r.Warnings, "mixture-of-experts", "decode kernels")
	}
}

// The Qwen3.5-35B-A3B example's dry run (LoRA on the attention layers),
// with the model's published config.json (the multimodal form) and the
// Qwen tokenizer, on cuda:0 in bf16: every expert's parameters are counted
// (34,660,610,688, computed by hand in torch's TestConfigQwen35MoE), and a
// token's active ones are those less 248 of the 256 experts of each of the
// 40 layers (the top-8 and the shared expert stay). By hand: the frozen
// bf16 base once; rank-32 adapters on q_proj [8192, 2048], k_proj and
// v_proj [512, 2048] and o_proj [2048, 4096] of the 10 attention layers
// (32 x (10240 + 2 x 2560 + 6144) a layer) in f32 with their gradients and
// two AdamW moments; the merged decode model's copy of those weights; the
// KV cache of the 10 attention layers, 2 x 10 x 64 slots x 2049 positions
// x 512 x 2 bytes, and the decode state of the 30 Gated DeltaNet layers,
// per slot a conv state of 3 inputs of 8192 channels (bf16) and 32 heads'
// 128 x 128 recurrent state (float32); the checkpointed activations: each
// layer's input (bf16), two sparse DeltaNet layers' worth (per token
// 6 x 2048 + 3 x 8192 + 4 x 32 + 10 x 4096 + 11 x 4096 + 7 x 32 x 64
// floats, the experts' 4 x 8 x 512 + 2 x 8 x 2048 + 2 x 256, the shared
// expert's 4 x 512 + 2048 + 2, and the state at each of the 32 chunks'
// starts), the larger kind, SDPA's additive mask (16/2 heads a group,
// 2048 x 2048, bf16), and the chunked LM head (two 256-token chunks in
// float32 and the hidden states' gradient; the frozen head takes none). It fits one 141 GB
// H200. LoRA on the MLP projections of a MoE model is refused, naming the
// experts and the shared expert.
func TestDryRunQwen35MoEExample(t *testing.T) {
	dir := exampleModelDir(t, "Qwen3.5-35B-A3B", fixtures.Qwen35MoE35BConfig, "tokenizer.json", "tokenizer_config.json")
	index := fixtureIndex(t)
	load := func() config.Config { return exampleOnFixtures(t, "qwen3.5-35b-a3b-hotpotqa-grpo.yaml", dir, index) }
	r, err := Run(context.Background(), load())
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	const (
		params   = int64(34660610688)
		active   = params - 40*248*3*512*2048
		adapters = int64(10 * 32 * (10240 + 2*2560 + 6144))
		targets  = int64(10 * (8192*2048 + 2*512*2048 + 2048*4096))
		kv       = int64(2 * 10 * 64 * 2049 * 512 * 2)
		state    = int64(30 * 64 * ((2*16*128+32*128)*3*2 + 32*128*128*4))
		perToken = int64(6*2048 + 3*8192 + 4*32 + 10*4096 + 11*4096 + 7*32*64 + 4*8*512 + 2*8*2048 + 2*256 + 4*512 + 2048 + 2)
		acts     = 40*2048*2048*2 + 2*(perToken*2048+32*32*128*128)*4 + 8*2048*2048*2 + 2*256*248320*4 + 2048*2048*2
	)
	m := r.Memory
	t.Logf("%d params, %d active; total %.1fe9 (weights %.1fe9, kv %.2fe9, deltanet state %.2fe9, activations %.2fe9, merged %.1fe9)", r.Params,
		r.ActiveParams, float64(m.Total)/1e9, float64(m.Weights)/1e9, float64(m.KVCache)/1e9, float64(m.DeltaNetState)/1e9,
		float64(m.Activations)/1e9, float64(m.Merged)/1e9)
	if r.Params != params || r.ActiveParams != active {
		t.Errorf("params %d, active %d; want %d, %d", r.Params, r.ActiveParams, params, active)
	}
	if m.Weights != 2*params+4*adapters || m.Grads != 4*adapters || m.Optimizer != 8*adapters || m.Reference != 0 ||
		m.Merged != 2*targets {
		t.Errorf("weights %d, grads %d, optimizer %d, reference %d, merged %d; want %d, %d, %d, 0, %d", m.Weights, m.Grads,
			m.Optimizer, m.Reference, m.Merged, 2*params+4*adapters, 4*adapters, 8*adapters, 2*targets)
	}
	want := 2*params + 16*adapters + 2*targets + kv + state + acts
	if m.KVCache != kv || m.DeltaNetState != state || m.Activations != acts || m.Total != want {
		t.Errorf("kv cache %d, deltanet state %d, activations %d, total %d; want %d, %d, %d, %d", m.KVCache, m.DeltaNetState,
			m.Activations, m.Total, kv, state, acts, want)
	}
	if m.Total > 141e9 {
		t.Errorf("estimated %.1fe9 bytes: the example does not fit one H200 as its comment says", float64(m.Total)/1e9)
	}
	wantWarning(t, r.Warnings, "mixture-of-experts", "decode kernels")

	cfg := load()
	cfg.Model.LoRA.TargetModules = []string{"all-linear"}
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "mlp.shared_expert") {
		t.Errorf("LoRA on all linear layers of a MoE model: %v, want a refusal naming the experts and the shared expert", err)
	}
}
