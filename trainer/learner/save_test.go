package learner

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/safetensors"
	"github.com/agentrl/agentrl/torch/torchtest"
)

// A checkpoint keeps a bf16 parameter's f32 master weights beside AdamW's
// moments, and a resume restores them: the master, the moments and the
// step come back as they were, and the parameter is the master rounded.
// Without the master a resume would restart from the rounded bf16 weights
// and lose every step smaller than a bf16 rounding step.
func TestOptimizerStateKeepsMasterWeights(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	adamw := func(p *torch.Tensor) *torch.AdamW {
		o, err := torch.NewAdamW([]*torch.Tensor{p}, nil, []torch.AdamWGroup{{LR: 1e-6, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(o.Free)
		return o
	}
	p, _ := torchtest.BF16Param(t, []float32{0.02, -0.021, 0.0195})
	defer p.Free()
	opt := adamw(p)
	torchtest.LinearSteps(t, opt, p, []float32{1, -1, 2}, 30)
	path := filepath.Join(t.TempDir(), "optimizer.safetensors")
	f, err := gatherOptimizer(opt, []string{"w"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := safetensors.Write(path, f.tensors, f.meta); err != nil {
		t.Fatal(err)
	}
	// The resumed parameter is loaded from the bf16 checkpoint: the
	// rounded weights, which 30 steps of 1e-6 have not moved.
	held, _ := p.Float32s()
	q, _ := torchtest.BF16Param(t, held)
	defer q.Free()
	resumed := adamw(q)
	if err := loadOptimizer(resumed, []string{"w"}, path); err != nil {
		t.Fatal(err)
	}
	values := func(o *torch.AdamW) (step int64, master, m, v []float64) {
		st, err := o.State(0)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Free()
		if st.Master == nil {
			t.Fatal("no master weights in the optimizer state")
		}
		master, _ = st.Master.Float64s()
		m, _ = st.M.Float64s()
		v, _ = st.V.Float64s()
		return st.Step, master, m, v
	}
	s0, master0, m0, v0 := values(opt)
	s1, master1, m1, v1 := values(resumed)
	if s0 != 30 || s1 != s0 || !slices.Equal(master0, master1) || !slices.Equal(m0, m1) || !slices.Equal(v0, v1) {
		t.Fatalf("resumed state: step %d, master %v, m %v, v %v; saved: step %d, master %v, m %v, v %v", s1, master1, m1, v1, s0, master0, m0, v0)
	}
	a, _ := p.Float64s()
	b, _ := q.Float64s()
	if slices.Equal(master0, a) {
		t.Fatalf("master weights %v did not move from the bf16 weights", master0)
	}
	if !slices.Equal(a, b) {
		t.Errorf("resumed parameter %v, saved %v", b, a)
	}
}
