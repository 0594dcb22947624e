package dryrun

import (
	"context"
	"testing"

	"github.com/agentrl/agentrl/trainer/config"
)

// The dry run of TestDryRunTinyGemma4's model with its MoE block
// (model.tiny.moe_block: 4 experts of width 64, 2 a token): each layer adds
// the router (proj 4 x 128, scale 128, per_expert_scale 4), the fused
// experts (gate_up 4 x 128 x 128, down 4 x 128 x 64) and three norms; a
// token runs through 2 of the 4 experts.
func TestDryRunTinyGemma4MoE(t *testing.T) {
	cfg := config.Default()
	cfg.Model.Tiny.ModelType, cfg.Model.Tiny.MoEBlock = "gemma4_text", true
	dense := cfg
	dense.Model.Tiny.MoEBlock = false
	r, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	d, err := Run(context.Background(), dense)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	const expert = 3 * 128 * 64
	moe := int64(2 * (4*128 + 128 + 4 + 4*expert + 3*128))
	if r.Params != d.Params+moe || r.Model.SparseLayers() != 2 {
		t.Errorf("%d params (%d sparse layers), want the dense model's %d + %d and 2", r.Params, r.Model.SparseLayers(), d.Params, moe)
	}
	if r.ActiveParams != r.Params-2*2*expert {
		t.Errorf("%d active parameters, want %d (2 of the 4 experts in each layer)", r.ActiveParams, r.Params-2*2*expert)
	}
}
