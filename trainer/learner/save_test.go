package learner

import (
	"fmt"
	"path/filepath"
	"runtime"
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
	if err := f.write(path); err != nil {
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

// Writing an unsharded optimizer's state holds one parameter's state at a
// time: 8 parameters of 1 MiB each (16 MiB of moments) allocate about one
// parameter's bytes in Go, and the file reads back as the state it was
// written from. Gathering it whole first (as a ZeRO state is) held all 16
// MiB, on top of the optimizer's own: a 0.5B model's checkpoint held
// 3.95 GB more than its update.
func TestOptimizerSaveHoldsOneParameter(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	const n, each = 8, 1 << 18 // f32 elements: 1 MiB
	var ps []*torch.Tensor
	var names []string
	for i := range n {
		vals := make([]float32, each)
		for j := range vals {
			vals[j] = float32(i+1) * 1e-3
		}
		p, err := torch.FromFloat32(vals, each)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Free()
		if err := p.SetRequiresGrad(true); err != nil {
			t.Fatal(err)
		}
		ps, names = append(ps, p), append(names, fmt.Sprintf("layers.%d.weight", i))
	}
	opt, err := torch.NewAdamW(ps, nil, []torch.AdamWGroup{{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Free()
	for i, p := range ps {
		s := torch.NewScope()
		loss := s.MulScalar(s.Sum(s.Mul(p, p)), float64(i+1))
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "optimizer.safetensors")
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err := gatherOptimizer(opt, names, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.write(path); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	// One tensor's buffer, and the file writer's 1 MiB buffer.
	if got := after.TotalAlloc - before.TotalAlloc; got > 3*4*each {
		t.Errorf("saving %d parameters' moments (%d bytes) allocated %d bytes in Go: want one tensor's (%d) and the writer's buffer", n, 2*n*4*each, got, 4*each)
	}
	r, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i, name := range names {
		st, err := opt.State(i)
		if err != nil {
			t.Fatal(err)
		}
		for suffix, want := range map[string]*torch.Tensor{".exp_avg": st.M, ".exp_avg_sq": st.V} {
			w, _ := want.Float32s()
			got, err := r.Float32s(name + suffix)
			if err != nil || !slices.Equal(got, w) {
				t.Errorf("%s%s: the file holds other values than the optimizer (%v)", name, suffix, err)
			}
		}
		if r.Metadata()[name] != "1" {
			t.Errorf("%s: step %q in the file, want 1", name, r.Metadata()[name])
		}
		st.Free()
	}
}
