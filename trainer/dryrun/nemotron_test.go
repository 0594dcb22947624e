package dryrun

import (
	"context"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/config"
)

// The default job's dry run with a Nemotron-H-shaped tiny model
// (model.tiny.model_type nemotron_h, 3 layers: the pattern M*-), in f32 on
// the CPU. Its parameters by hand, from NemotronHForCausalLM's shapes
// (hidden 128, 4 heads of 32 with 2 kv heads, intermediate 256; the Mamba-2
// layer's 4 heads of 64 (inner 256), one group, state 16, 4 taps): the
// embeddings and the untied LM head, vocab x 128 each; the Mamba-2 block's
// norm 128, in_proj 128 x (2 x 256 + 2 x 16 + 4), conv 288 channels x 4
// and its bias, dt_bias, A_log and D of 4, gated norm 256, out_proj
// 256 x 128; the attention block's norm, q_proj 128 x 128, k_proj and
// v_proj 128 x 64, o_proj 128 x 128; the MLP block's norm, up_proj and
// down_proj 128 x 256; the final norm. What the engine holds by hand: the
// attention layer's keys and values (2 x 64 numbers a position), the
// Mamba-2 layer's conv state (3 inputs of 288 channels) and recurrent
// state (4 heads of 64 x 16, float32), per slot; the MLP layer nothing.
func TestDryRunTinyNemotronH(t *testing.T) {
	cfg := config.Default()
	cfg.Model.Tiny.ModelType, cfg.Model.Tiny.Layers = "nemotron_h", 3
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	V := int64(r.Vocab)
	const (
		mamba = 128 + 128*(2*256+2*16+4) + 288*4 + 288 + 3*4 + 256 + 256*128
		attn  = 128 + 128*128 + 2*128*64 + 128*128
		mlp   = 128 + 2*128*256
	)
	params := 2*V*128 + mamba + attn + mlp + 128
	slots, positions := int64(cfg.Rollout.Slots), int64(cfg.Env.MaxTokens+1)
	kv := slots * positions * 2 * 64 * 4
	state := slots * (288*3*4 + 4*64*16*4)
	m := r.Memory
	t.Logf("%d params; total %.3f GB (kv %d, state %d, activations %d)", r.Params, float64(m.Total)/1e9, m.KVCache, m.DeltaNetState, m.Activations)
	if r.Model.ModelType != torch.NemotronH || r.Model.Nemotron.Pattern() != "M*-" || r.Params != params {
		t.Errorf("%s %s: %d params, want nemotron_h M*- and %d", r.Model.ModelType, r.Model.Nemotron.Pattern(), r.Params, params)
	}
	if m.KVCache != kv || m.DeltaNetState != state {
		t.Errorf("kv cache %d, recurrent state %d; want %d and %d", m.KVCache, m.DeltaNetState, kv, state)
	}
	wantWarning(t, r.Warnings, "Nemotron-H", "decode kernels")
}

// The default job's dry run with a tiny Nemotron-H with a mixture of
// experts (the pattern M*E): the M and * blocks as above, the E block by
// hand from NemotronHMoE's shapes: its norm 128, the router 4 x 128 and
// its e_score_correction_bias 4, the shared expert's up_proj and down_proj
// 128 x 256, and 4 experts' up_proj and down_proj 128 x 64; one token runs
// 2 of the 4 experts (the active parameters).
func TestDryRunTinyNemotronHMoE(t *testing.T) {
	cfg := config.Default()
	cfg.Model.Tiny.ModelType, cfg.Model.Tiny.Layers, cfg.Model.Tiny.NemotronPattern = "nemotron_h", 3, "M*E"
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	V := int64(r.Vocab)
	const (
		mamba  = 128 + 128*(2*256+2*16+4) + 288*4 + 288 + 3*4 + 256 + 256*128
		attn   = 128 + 128*128 + 2*128*64 + 128*128
		expert = 2 * 128 * 64
		moe    = 128 + 4*128 + 4 + 2*128*256 + 4*expert
	)
	params := 2*V*128 + mamba + attn + moe + 128
	if r.Model.Nemotron.Pattern() != "M*E" || r.Model.SparseLayers() != 1 || r.Params != params {
		t.Errorf("%s: %d params (%d sparse layers), want M*E, %d and 1", r.Model.Nemotron.Pattern(), r.Params, r.Model.SparseLayers(), params)
	}
	if r.ActiveParams != params-2*expert {
		t.Errorf("%d active parameters, want %d (2 of the 4 experts)", r.ActiveParams, params-2*expert)
	}
}
