package torch_test

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/torch/torchtest"
)

// bf16HalfStep is half the distance between x and the next bf16 number
// away from zero (bf16 keeps 8 significant bits).
func bf16HalfStep(x float64) float64 {
	_, e := math.Frexp(math.Abs(x)) // |x| = f * 2^e, f in [0.5, 1)
	return math.Ldexp(1, e-9)
}

// A bf16 parameter learns at lr 1e-6 through f32 master weights. With a
// constant gradient g, AdamW's bias-corrected moments are exactly g and
// g^2, so each step (no weight decay) moves a weight by lr g / (|g| + eps),
// lr against the gradient's sign: after N steps the f32 weights are w0 - N
// lr sign(g). A step of 1e-6 is below half a bf16 rounding step near 0.02
// (2^-14 = 6.1e-5), so a bf16 AdamW never moves them; 300 steps move them
// 3e-4, over two rounding steps. The bf16 weights must be that f32 result
// rounded: within half a rounding step of it. The master weights and the
// f32 moments come back in the state, and a new optimizer given that state
// continues exactly where the first stopped.
func TestAdamWTrainsBF16ThroughMasterWeights(t *testing.T) {
	const lr, steps = 1e-6, 300
	p, w0 := torchtest.BF16Param(t, []float32{0.02, -0.021, 0.0195, 0.0203})
	defer p.Free()
	c := []float32{1, -1, 2, -0.5}
	opt, err := torch.NewAdamW([]*torch.Tensor{p}, nil, []torch.AdamWGroup{{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Free()
	torchtest.LinearSteps(t, opt, p, c, steps)

	want := func(i, n int) float64 { return w0[i] - float64(n)*lr*math.Copysign(1, float64(c[i])) }
	got, err := p.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		w := want(i, steps)
		if got[i] == w0[i] {
			t.Errorf("weight %d did not move from %v (want %v)", i, w0[i], w)
		}
		if math.Abs(got[i]-w) > bf16HalfStep(w)+1e-7 {
			t.Errorf("weight %d = %v, f32 run %v: more than half a bf16 step (%v) apart", i, got[i], w, bf16HalfStep(w))
		}
	}
	st, err := opt.State(0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Free()
	if st.Master == nil || st.Master.DType() != torch.Float32 || st.M.DType() != torch.Float32 {
		t.Fatalf("state of a bf16 parameter: master %v, moments %v; want f32 master weights and moments", st.Master, st.M)
	}
	master, err := st.Master.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	for i := range master {
		if w := want(i, steps); math.Abs(master[i]-w) > 1e-6 {
			t.Errorf("master weight %d = %v, want %v", i, master[i], w)
		}
	}

	// Resume: a fresh bf16 parameter holding the saved (rounded) weights
	// and an optimizer given the saved state.
	q, _ := torchtest.BF16Param(t, []float32{float32(got[0]), float32(got[1]), float32(got[2]), float32(got[3])})
	defer q.Free()
	resumed, err := torch.NewAdamW([]*torch.Tensor{q}, nil, []torch.AdamWGroup{{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}})
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Free()
	if err := resumed.SetState(0, st); err != nil {
		t.Fatal(err)
	}
	torchtest.LinearSteps(t, opt, p, c, steps)
	torchtest.LinearSteps(t, resumed, q, c, steps)
	a, _ := p.Float64s()
	b, _ := q.Float64s()
	for i := range a {
		if a[i] != b[i] || math.Abs(a[i]-want(i, 2*steps)) > bf16HalfStep(a[i])+1e-7 {
			t.Errorf("weight %d after %d more steps: %v, resumed %v, f32 run %v", i, steps, a[i], b[i], want(i, 2*steps))
		}
	}
}
