package dryrun

import (
	"context"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/config"
)

// The default job's dry run with a Gemma-4-shaped tiny model
// (model.tiny.model_type gemma4_text, 2 layers: sliding, then full as the
// last layer always is), in f32 on the CPU. Its parameters by hand, from
// Gemma4ForCausalLM's shapes (hidden 128, 4 heads, 2 kv heads, intermediate
// 256; sliding layers' heads of 32, the full layer's of 64; per-layer
// inputs of 16; tied embeddings): each layer's four norms, q/k/v/o, q_norm
// and k_norm of its head size, gate/up/down, the per-layer input's gate
// 128 x 16, projection 16 x 128 and norm, and layer_scalar; the embeddings
// vocab x 128, the per-layer table vocab x (2 x 16), its projection
// 128 x 32 and norm 16, the final norm. What the engine holds by hand: each
// layer's keys and values, 2 x 2 x 32 numbers a position for the sliding
// layer over its window of 128 positions (fewer than the job's) and
// 2 x 2 x 64 for the full one over every position, per slot.
func TestDryRunTinyGemma4(t *testing.T) {
	cfg := config.Default()
	cfg.Model.Tiny.ModelType = "gemma4_text"
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	V := int64(r.Vocab)
	layer := func(hd int64) int64 {
		attn := 128*4*hd + 2*128*2*hd + 4*hd*128 + 2*hd
		return 4*128 + attn + 3*128*256 + 128*16 + 16*128 + 128 + 1
	}
	params := V*128 + V*32 + 128*32 + 16 + layer(32) + layer(64) + 128
	slots, positions := int64(cfg.Rollout.Slots), int64(cfg.Env.MaxTokens+1)
	const window = 128
	if positions <= window || r.Model.Gemma.SlidingWindow != window {
		t.Fatalf("the job's %d positions, the model's window %d: want more than %d and %d", positions,
			r.Model.Gemma.SlidingWindow, window, window)
	}
	kv := slots * (window*2*2*32 + positions*2*2*64) * 4
	m := r.Memory
	t.Logf("%d params; total %.3f GB (kv %d, activations %d)", r.Params, float64(m.Total)/1e9, m.KVCache, m.Activations)
	s, f := torch.SlidingAttention, torch.FullAttention
	if !r.Model.IsGemma4() || !slices.Equal(r.Model.LayerTypes, []string{s, f}) || r.Params != params {
		t.Errorf("%s %v: %d params, want gemma4_text [sliding full] and %d", r.Model.ModelType, r.Model.LayerTypes, r.Params, params)
	}
	if m.KVCache != kv || m.DeltaNetState != 0 {
		t.Errorf("kv cache %d, recurrent state %d; want %d and 0", m.KVCache, m.DeltaNetState, kv)
	}
	wantWarning(t, r.Warnings, "Gemma 4", "decode kernels")
}
