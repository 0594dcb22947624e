package torch

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The ZeRO tests train four parameters of 15 + 7 + 6 + 3 = 31 elements
// with AdamW. Over two ranks the flat vector is padded to 32, so each rank
// owns S = 16 elements: rank 0 the first parameter (15) and the first
// element of the second, rank 1 the other 6 of the second, the third (6,
// bf16: f32 masters) and the fourth (3), plus one element of padding. The
// second parameter is cut between the ranks and gets a gradient from rank
// 0's loss only; the fourth gets none on any rank, so it is never stepped
// (weight decay would move it) and has no moments.
var zeroShapes = [][]int64{{3, 5}, {7}, {2, 3}, {3}}

const (
	zeroBF16   = 2 // the bf16 parameter
	zeroNoGrad = 3 // the parameter no loss touches
	zeroSteps  = 5 // optimizer steps of a run
	zeroResume = 3 // a resumed run's checkpoint is taken after these steps
	zeroClip   = 0.5
)

var zeroHyper = AdamWGroup{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.1}

func zeroNumel(i int) int {
	n := int64(1)
	for _, d := range zeroShapes[i] {
		n *= d
	}
	return int(n)
}

// zeroInitial is parameter i's starting values.
func zeroInitial(i int) []float32 {
	v := make([]float32, zeroNumel(i))
	for j := range v {
		v[j] = float32(0.5 * math.Sin(float64(1+7*i+j)))
	}
	return v
}

// zeroParams makes the parameters from values (zeroInitial's when nil).
func zeroParams(t *testing.T, values [][]float32) []*Tensor {
	t.Helper()
	var ps []*Tensor
	for i, shape := range zeroShapes {
		v := zeroInitial(i)
		if values != nil {
			v = values[i]
		}
		p, err := FromFloat32(v, shape...)
		if err != nil {
			t.Fatal(err)
		}
		if i == zeroBF16 {
			b, err := p.To(CPU, BFloat16)
			p.Free()
			if err != nil {
				t.Fatal(err)
			}
			p = b
		}
		if err := p.SetRequiresGrad(true); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Free)
		ps = append(ps, p)
	}
	return ps
}

// zeroBackward back-propagates rank r's loss, sum over the parameters i of
// sum(0.5 c p^2 + d p) with c_j = 1 + 0.1((r + 2i + j) mod 5) and d_j =
// 0.3 cos(r + i + j): its gradient c p + d changes with p, so the steps
// differ. Parameter 1 is in rank 0's loss only, parameter 3 in none.
func zeroBackward(t *testing.T, opt *AdamW, ps []*Tensor, r int) {
	t.Helper()
	s := NewScope()
	defer s.Close()
	var terms []*Tensor
	for i, p := range ps {
		if i == zeroNoGrad || (i == 1 && r != 0) {
			continue
		}
		n := zeroNumel(i)
		c, d := make([]float32, n), make([]float32, n)
		for j := range c {
			c[j] = float32(1 + 0.1*float64((r+2*i+j)%5))
			d[j] = float32(0.3 * math.Cos(float64(r+i+j)))
		}
		ct := s.To(s.Float32(c, zeroShapes[i]...), CPU, p.DType())
		dt := s.To(s.Float32(d, zeroShapes[i]...), CPU, p.DType())
		term := s.Add(s.MulScalar(s.Mul(ct, s.Mul(p, p)), 0.5), s.Mul(dt, p))
		terms = append(terms, s.To(s.Sum(term), CPU, Float32))
	}
	loss := s.Sum(s.Stack(0, terms...))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	if err := opt.Accumulate(); err != nil {
		t.Fatal(err)
	}
}

// zeroRun takes n steps: the losses of ranks (both in one process, one on
// each of two ranks), reduced, clipped to zeroClip, stepped. It returns
// the gradient norms.
func zeroRun(t *testing.T, opt *AdamW, ps []*Tensor, ranks []int, n int) []float64 {
	t.Helper()
	var norms []float64
	for range n {
		for _, r := range ranks {
			zeroBackward(t, opt, ps, r)
		}
		if err := opt.ReduceGrads(); err != nil {
			t.Fatal(err)
		}
		norm, err := opt.ClipGradNorm(zeroClip)
		if err != nil {
			t.Fatal(err)
		}
		norms = append(norms, norm)
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		if err := opt.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
	}
	return norms
}

// zeroState is an optimizer's whole state and its parameters' values.
type zeroState struct {
	Weights, M, V, Master [][]float32 // nil entries where there is none
	Steps                 []int64
	Norms                 []float64
	StateBytes            int64 // what this rank holds
}

// zeroCapture reads the whole state (a collective when sharded).
func zeroCapture(t *testing.T, opt *AdamW, ps []*Tensor) zeroState {
	t.Helper()
	var z zeroState
	floats := func(x *Tensor) []float32 {
		if x == nil {
			return nil
		}
		v, err := x.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for i, p := range ps {
		st, err := opt.State(i)
		if err != nil {
			t.Fatal(err)
		}
		z.Weights = append(z.Weights, floats(p))
		z.M, z.V, z.Master = append(z.M, floats(st.M)), append(z.V, floats(st.V)), append(z.Master, floats(st.Master))
		z.Steps = append(z.Steps, st.Step)
		st.Free()
	}
	var err error
	if z.StateBytes, err = opt.StateBytes(); err != nil {
		t.Fatal(err)
	}
	return z
}

// zeroOptimizer makes the optimizer over ps, sharded over g at stage
// (g nil: one process), and restores from when not nil.
func zeroOptimizer(t *testing.T, ps []*Tensor, g *Group, stage int, from *zeroState) *AdamW {
	t.Helper()
	opt, err := NewAdamW(ps, nil, []AdamWGroup{zeroHyper})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(opt.Free)
	if g != nil {
		// 24-byte collectives: chunks of 3 f32 elements per rank, so a
		// shard of 16 takes six reduce-scatters and six all-gathers.
		if err := opt.Shard(g, stage, 24); err != nil {
			t.Fatal(err)
		}
	}
	if from == nil {
		return opt
	}
	for i := range ps {
		if from.Steps[i] == 0 {
			continue
		}
		st := ParamState{Step: from.Steps[i]}
		tensors := []**Tensor{&st.M, &st.V, &st.Master}
		for k, vals := range [][]float32{from.M[i], from.V[i], from.Master[i]} {
			if vals == nil {
				continue
			}
			x, err := FromFloat32(vals, zeroShapes[i]...)
			if err != nil {
				t.Fatal(err)
			}
			*tensors[k] = x
		}
		err := opt.SetState(i, st)
		st.Free()
		if err != nil {
			t.Fatal(err)
		}
	}
	return opt
}

// TestZeroMatchesOneProcess: two ranks (this test binary, as
// TestZeroWorker) train with ZeRO stage 1 and stage 2 over Gloo, each
// back-propagating its own loss; one process back-propagates both. After
// five clipped steps with weight decay the weights (a bf16 parameter's f32
// masters) must agree within 1e-5, with equal step counts and gradient
// norms, and the ranks' weights must be bit-identical. Each rank holds
// its 1/2 of the state, measured: rank 0 the moments of 16 f32 elements,
// 2 x 16 x 4 = 128 bytes; rank 1 the moments of 12 stepped elements (6 of
// the second parameter, 6 of the bf16 one; the fourth has none) and the
// bf16 parameter's 6 masters: 2 x 12 x 4 + 6 x 4 = 120 bytes; one process
// all of it: 2 x 28 x 4 + 24 = 248 = 128 + 120. A state saved by one
// process after 3 steps resumes on two ranks, and one gathered from two
// ranks resumes in one process, each ending like the run it continues.
func TestZeroMatchesOneProcess(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	dir := t.TempDir()
	ps := zeroParams(t, nil)
	opt := zeroOptimizer(t, ps, nil, 0, nil)
	norms := zeroRun(t, opt, ps, []int{0, 1}, zeroSteps)
	one := zeroCapture(t, opt, ps)
	one.Norms = norms
	for k, n := range norms {
		if n <= zeroClip {
			t.Fatalf("step %d: gradient norm %g does not exceed the clip %g: clipping would not be tested", k, n, zeroClip)
		}
	}
	if one.StateBytes != 248 {
		t.Errorf("one process holds %d bytes of state, want 248", one.StateBytes)
	}
	// The checkpoint two ranks resume from.
	ps3 := zeroParams(t, nil)
	opt3 := zeroOptimizer(t, ps3, nil, 0, nil)
	three := zeroRun(t, opt3, ps3, []int{0, 1}, zeroResume)
	saved := zeroCapture(t, opt3, ps3)
	saved.Norms = three
	writeJSON(t, filepath.Join(dir, "one-3.json"), saved)

	runTwoRanks(t, "TestZeroWorker", "AGENTRL_ZERO_DIR="+dir)
	for _, stage := range []int{1, 2} {
		var ranks [2]zeroState
		for r := range ranks {
			readJSON(t, filepath.Join(dir, fmt.Sprintf("run-%d-%d.json", stage, r)), &ranks[r])
			resumed := zeroState{}
			readJSON(t, filepath.Join(dir, fmt.Sprintf("resumed-%d-%d.json", stage, r)), &resumed)
			zeroCompare(t, fmt.Sprintf("stage %d rank %d vs one process", stage, r), ranks[r], one)
			zeroCompare(t, fmt.Sprintf("stage %d rank %d resumed from one process's step %d", stage, r, zeroResume), resumed, one)
		}
		for i := range ranks[0].Weights {
			if fmt.Sprint(ranks[0].Weights[i]) != fmt.Sprint(ranks[1].Weights[i]) {
				t.Errorf("stage %d: param %d differs between the ranks: %v vs %v", stage, i, ranks[0].Weights[i], ranks[1].Weights[i])
			}
		}
		if ranks[0].StateBytes != 128 || ranks[1].StateBytes != 120 {
			t.Errorf("stage %d: the ranks hold %d and %d bytes of state, want 128 and 120 (one process: %d)", stage, ranks[0].StateBytes, ranks[1].StateBytes, one.StateBytes)
		}
		// Two ranks' state after 3 steps, resumed in one process.
		var two zeroState
		readJSON(t, filepath.Join(dir, fmt.Sprintf("two-%d-3.json", stage)), &two)
		ps := zeroParams(t, two.Weights)
		opt := zeroOptimizer(t, ps, nil, 0, &two)
		norms := zeroRun(t, opt, ps, []int{0, 1}, zeroSteps-zeroResume)
		got := zeroCapture(t, opt, ps)
		got.Norms = append(append([]float64{}, ranks[0].Norms[:zeroResume]...), norms...)
		zeroCompare(t, fmt.Sprintf("one process resumed from stage %d's step %d vs two ranks", stage, zeroResume), got, ranks[0])
	}
}

// zeroCompare checks that got ended like want: weights (masters of the
// bf16 parameter) and moments within 1e-5, norms within 1e-5 relative, the
// same step counts.
func zeroCompare(t *testing.T, what string, got, want zeroState) {
	t.Helper()
	if fmt.Sprint(got.Steps) != fmt.Sprint(want.Steps) {
		t.Errorf("%s: step counts %v, want %v", what, got.Steps, want.Steps)
	}
	if got.Steps[zeroNoGrad] != 0 || fmt.Sprint(got.Weights[zeroNoGrad]) != fmt.Sprint(zeroInitial(zeroNoGrad)) {
		t.Errorf("%s: the parameter without a gradient was stepped: step %d, %v", what, got.Steps[zeroNoGrad], got.Weights[zeroNoGrad])
	}
	worst := 0.0
	for i := range want.Weights {
		w, g := want.Weights[i], got.Weights[i]
		if i == zeroBF16 {
			w, g = want.Master[i], got.Master[i]
		}
		for _, pair := range [][2][]float32{{w, g}, {want.M[i], got.M[i]}, {want.V[i], got.V[i]}} {
			if len(pair[0]) != len(pair[1]) {
				t.Fatalf("%s: param %d: %d values, want %d", what, i, len(pair[1]), len(pair[0]))
			}
			for j := range pair[0] {
				worst = math.Max(worst, math.Abs(float64(pair[0][j]-pair[1][j])))
			}
		}
	}
	if worst > 1e-5 {
		t.Errorf("%s: state differs by up to %g (> 1e-5)", what, worst)
	}
	for k := range want.Norms {
		if math.Abs(got.Norms[k]-want.Norms[k]) > 1e-5*want.Norms[k] {
			t.Errorf("%s: step %d gradient norm %g, want %g", what, k, got.Norms[k], want.Norms[k])
		}
	}
	t.Logf("%s: max difference %.2g", what, worst)
}

// TestZeroWorker is one rank of TestZeroMatchesOneProcess.
func TestZeroWorker(t *testing.T) {
	dir := os.Getenv("AGENTRL_ZERO_DIR")
	if dir == "" {
		t.Skip("run by TestZeroMatchesOneProcess in a child process")
	}
	rank, _ := strconv.Atoi(os.Getenv("AGENTRL_TEST_RANK"))
	_, g := joinTestGroup(t, rank)
	var fromOne zeroState
	readJSON(t, filepath.Join(dir, "one-3.json"), &fromOne)
	for _, stage := range []int{1, 2} {
		ps := zeroParams(t, nil)
		opt := zeroOptimizer(t, ps, g, stage, nil)
		norms := zeroRun(t, opt, ps, []int{rank}, zeroResume)
		three := zeroCapture(t, opt, ps)
		if rank == 0 {
			writeJSON(t, filepath.Join(dir, fmt.Sprintf("two-%d-3.json", stage)), three)
		}
		norms = append(norms, zeroRun(t, opt, ps, []int{rank}, zeroSteps-zeroResume)...)
		run := zeroCapture(t, opt, ps)
		run.Norms = norms
		writeJSON(t, filepath.Join(dir, fmt.Sprintf("run-%d-%d.json", stage, rank)), run)

		ps = zeroParams(t, fromOne.Weights)
		opt = zeroOptimizer(t, ps, g, stage, &fromOne)
		norms = zeroRun(t, opt, ps, []int{rank}, zeroSteps-zeroResume)
		resumed := zeroCapture(t, opt, ps)
		resumed.Norms = append(append([]float64{}, fromOne.Norms...), norms...)
		writeJSON(t, filepath.Join(dir, fmt.Sprintf("resumed-%d-%d.json", stage, rank)), resumed)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
