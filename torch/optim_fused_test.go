package torch_test

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/torch"
)

// fusedCase is one parameter of the fused-versus-loop test: its shape and
// dtype, its group, and whether it gets a gradient on odd steps too.
type fusedCase struct {
	shape []int64
	dtype torch.DType
	group int
	odd   bool
}

// The fused AdamW (at::_fused_adamw_) and the loop give the same weights,
// moments and step counts, step by step, from the same gradients: two
// groups with their own learning rate and weight decay (one rate changed
// half-way), an f32 matrix and vector, a bf16 parameter trained through
// its f32 master weights, and a parameter that has a gradient on even
// steps only, so that its step count, and so its bias correction, lags the
// others'. The gradients are clipped before each step; the norms the two
// report agree with the norm worked out from the gradients in float64.
// The gradient of sum(c * p) is c whatever p holds, so both optimizers see
// the same gradients even where their weights differ in the last bits.
func TestAdamWFusedMatchesLoop(t *testing.T) {
	cases := []fusedCase{
		{[]int64{24, 33}, torch.Float32, 0, true},
		{[]int64{37}, torch.Float32, 1, true},
		{[]int64{16, 20}, torch.BFloat16, 0, true},
		{[]int64{5}, torch.Float32, 1, false},
	}
	groups := []torch.AdamWGroup{
		{LR: 3e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1},
		{LR: 1e-2, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0},
	}
	group := make([]int, len(cases))
	for i, c := range cases {
		group[i] = c.group
	}
	r := rand.New(rand.NewPCG(7, 8))
	init := make([][]float32, len(cases))
	for i, c := range cases {
		init[i] = randFloats(r, numel(c.shape), 1)
	}
	// fused[0] takes the default path, fused[1] the loop.
	var params [2][]*torch.Tensor
	var opts [2]*torch.AdamW
	for k := range opts {
		for i, c := range cases {
			p := newParam(t, init[i], c.shape, c.dtype)
			defer p.Free()
			params[k] = append(params[k], p)
		}
		o, err := torch.NewAdamW(params[k], group, groups)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Free()
		opts[k] = o
	}
	fused, err := opts[0].Fused()
	if err != nil {
		t.Fatal(err)
	}
	if !fused {
		err := opts[0].SetFused(true)
		if err == nil || !strings.Contains(err.Error(), "_fused_adamw_") {
			t.Fatalf("the default path is the loop, yet SetFused(true) says %v; want a refusal naming at::_fused_adamw_", err)
		}
		t.Skipf("the linked libtorch has no fused AdamW for the CPU (%v)", err)
	}
	if err := opts[1].SetFused(false); err != nil {
		t.Fatal(err)
	}
	if f, _ := opts[1].Fused(); f {
		t.Fatal("SetFused(false) left the fused step on")
	}

	const steps, maxNorm = 12, 5.0
	for step := 1; step <= steps; step++ {
		if step == steps/2 {
			for _, o := range opts {
				if err := o.SetLR(0, 2e-2); err != nil {
					t.Fatal(err)
				}
			}
		}
		var sq float64
		grads := make([][]float32, len(cases))
		for i, c := range cases {
			if c.odd || step%2 == 0 {
				grads[i] = randFloats(r, numel(c.shape), 2)
				if c.dtype == torch.BFloat16 {
					grads[i] = roundBF16(t, grads[i])
				}
				for _, g := range grads[i] {
					sq += float64(g) * float64(g)
				}
			}
		}
		for k, o := range opts {
			for i, p := range params[k] {
				if grads[i] != nil {
					linearBackward(t, p, grads[i], cases[i].shape)
				}
			}
			norm, err := o.ClipGradNorm(maxNorm)
			if err != nil {
				t.Fatal(err)
			}
			if want := math.Sqrt(sq); math.Abs(norm-want) > 1e-5*want {
				t.Fatalf("step %d, optimizer %d: grad norm %v, want %v", step, k, norm, want)
			}
			if err := o.Step(); err != nil {
				t.Fatal(err)
			}
			if err := o.ZeroGrad(); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range cases {
			a, b := values(t, params[0][i]), values(t, params[1][i])
			tol := 1e-6
			if c.dtype == torch.BFloat16 {
				tol = 1.0 / 128 // a master differing in the last bits may round to the next bf16 number
			}
			if d, j := maxDiff(a, b); d > tol*math.Max(1, math.Abs(b[j])) {
				t.Fatalf("step %d, param %d: fused %v, loop %v at %d", step, i, a[j], b[j], j)
			}
		}
	}
	for i, c := range cases {
		var st [2]torch.ParamState
		for k, o := range opts {
			var err error
			if st[k], err = o.State(i); err != nil {
				t.Fatal(err)
			}
			defer st[k].Free()
		}
		want := int64(steps)
		if !c.odd {
			want = steps / 2
		}
		if st[0].Step != want || st[1].Step != want {
			t.Errorf("param %d: steps %d (fused) and %d (loop), want %d", i, st[0].Step, st[1].Step, want)
		}
		pairs := [][2]*torch.Tensor{{st[0].M, st[1].M}, {st[0].V, st[1].V}}
		if c.dtype == torch.BFloat16 {
			if st[0].Master == nil || st[1].Master == nil {
				t.Fatalf("param %d (bf16) has no master weights: %v, %v", i, st[0].Master, st[1].Master)
			}
			pairs = append(pairs, [2]*torch.Tensor{st[0].Master, st[1].Master})
		}
		for n, pr := range pairs {
			a, b := values(t, pr[0]), values(t, pr[1])
			if d, j := maxDiff(a, b); d > 1e-5*math.Abs(b[j])+1e-9 {
				t.Errorf("param %d, state %s: fused %v, loop %v at %d", i, []string{"m", "v", "master"}[n], a[j], b[j], j)
			}
		}
	}
}

func numel(shape []int64) int {
	n := 1
	for _, d := range shape {
		n *= int(d)
	}
	return n
}

// randFloats draws n values uniform in [-scale, scale).
func randFloats(r *rand.Rand, n int, scale float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(scale * (2*r.Float64() - 1))
	}
	return out
}

// newParam makes a leaf tensor of vals (rounded to dt) that requires grad.
func newParam(t *testing.T, vals []float32, shape []int64, dt torch.DType) *torch.Tensor {
	t.Helper()
	f, err := torch.FromFloat32(vals, shape...)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Free()
	p, err := f.To(torch.CPU, dt)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetRequiresGrad(true); err != nil {
		t.Fatal(err)
	}
	return p
}

// roundBF16 is vals rounded to bf16.
func roundBF16(t *testing.T, vals []float32) []float32 {
	t.Helper()
	p := newParam(t, vals, []int64{int64(len(vals))}, torch.BFloat16)
	defer p.Free()
	out, err := p.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// linearBackward gives p the gradient c (its shape) through the loss
// sum(c * p).
func linearBackward(t *testing.T, p *torch.Tensor, c []float32, shape []int64) {
	t.Helper()
	s := torch.NewScope()
	defer s.Close()
	ct := s.To(s.Float32(c, shape...), torch.CPU, p.DType())
	loss := s.Sum(s.Mul(p, ct))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
}

func values(t *testing.T, x *torch.Tensor) []float64 {
	t.Helper()
	v, err := x.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// maxDiff is the largest |a[i] - b[i]| and its index.
func maxDiff(a, b []float64) (float64, int) {
	var d float64
	at := 0
	for i := range a {
		if x := math.Abs(a[i] - b[i]); x > d {
			d, at = x, i
		}
	}
	return d, at
}
