package torch

import (
	"math"
	"strings"
	"testing"
)

func near(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values %v, want %d %v", what, len(got), got, len(want), want)
	}
	for i := range got {
		if math.Abs(float64(got[i])-float64(want[i])) > tol {
			t.Fatalf("%s[%d] = %v, want %v (all: %v)", what, i, got[i], want[i], got)
		}
	}
}

func vals(t *testing.T, s *Scope, x *Tensor) []float32 {
	t.Helper()
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Every expected value below is worked out by hand from the inputs.
func TestOpsByHand(t *testing.T) {
	s := NewScope()
	defer s.Close()
	a := s.Float32([]float32{1, -2, 4, 0.5}, 2, 2)
	b := s.Float32([]float32{2, 2, -1, 4}, 2, 2)
	near(t, "add", vals(t, s, s.Add(a, b)), []float32{3, 0, 3, 4.5}, 1e-6)
	near(t, "sub", vals(t, s, s.Sub(a, b)), []float32{-1, -4, 5, -3.5}, 1e-6)
	near(t, "mul", vals(t, s, s.Mul(a, b)), []float32{2, -4, -4, 2}, 1e-6)
	near(t, "div", vals(t, s, s.Div(a, b)), []float32{0.5, -1, -4, 0.125}, 1e-6)
	near(t, "addscalar", vals(t, s, s.AddScalar(a, 1)), []float32{2, -1, 5, 1.5}, 1e-6)
	near(t, "mulscalar", vals(t, s, s.MulScalar(a, -3)), []float32{-3, 6, -12, -1.5}, 1e-6)
	near(t, "rsub", vals(t, s, s.RSub(1, a)), []float32{0, 3, -3, 0.5}, 1e-6)
	near(t, "rdiv", vals(t, s, s.RDiv(2, a)), []float32{2, -1, 0.5, 4}, 1e-6)
	near(t, "neg", vals(t, s, s.Neg(a)), []float32{-1, 2, -4, -0.5}, 1e-6)
	near(t, "abs", vals(t, s, s.Abs(a)), []float32{1, 2, 4, 0.5}, 1e-6)
	near(t, "pow", vals(t, s, s.PowScalar(a, 2)), []float32{1, 4, 16, 0.25}, 1e-6)
	near(t, "sqrt", vals(t, s, s.Sqrt(s.Abs(a))), []float32{1, float32(math.Sqrt2), 2, float32(math.Sqrt(0.5))}, 1e-6)
	near(t, "exp", vals(t, s, s.Exp(s.Float32([]float32{0, 1}, 2))), []float32{1, float32(math.E)}, 1e-6)
	near(t, "log", vals(t, s, s.Log(s.Float32([]float32{1, float32(math.E), 0.25}, 3))), []float32{0, 1, float32(-2 * math.Ln2)}, 1e-6)
	near(t, "clamp", vals(t, s, s.Clamp(a, -1, 1)), []float32{1, -1, 1, 0.5}, 1e-6)
	near(t, "clampmin", vals(t, s, s.ClampMin(a, 0)), []float32{1, 0, 4, 0.5}, 1e-6)
	near(t, "minimum", vals(t, s, s.Minimum(a, b)), []float32{1, -2, -1, 0.5}, 1e-6)
	near(t, "maximum", vals(t, s, s.Maximum(a, b)), []float32{2, 2, 4, 4}, 1e-6)
	near(t, "sum", vals(t, s, s.Sum(a)), []float32{3.5}, 1e-6)
	near(t, "sum0", vals(t, s, s.Sum(a, 0)), []float32{5, -1.5}, 1e-6)
	near(t, "sum1", vals(t, s, s.Sum(a, -1)), []float32{-1, 4.5}, 1e-6)
	near(t, "mean1", vals(t, s, s.Mean(a, 1)), []float32{-0.5, 2.25}, 1e-6)
	near(t, "max", vals(t, s, s.Max(a)), []float32{4}, 1e-6)
	near(t, "min0", vals(t, s, s.Min(a, 0)), []float32{1, -2}, 1e-6)
	mask := s.Float32([]float32{1, 0, 1, 1}, 2, 2)
	// masked mean of all: (1 + 4 + 0.5) / 3; per row: 1/1, 4.5/2
	near(t, "maskedmean", vals(t, s, s.MaskedMean(a, mask)), []float32{5.5 / 3}, 1e-6)
	near(t, "maskedmean1", vals(t, s, s.MaskedMean(a, mask, 1)), []float32{1, 2.25}, 1e-6)
	near(t, "maskedmean-empty", vals(t, s, s.MaskedMean(a, s.Float32([]float32{0, 0, 0, 0}, 2, 2))), []float32{0}, 1e-6)
	near(t, "maskedsum", vals(t, s, s.MaskedSum(a, mask)), []float32{5.5}, 1e-6)
	// log_softmax([0, ln 3]) = [ln(1/4), ln(3/4)]
	ls := s.LogSoftmax(s.Float32([]float32{0, float32(math.Log(3))}, 1, 2), -1)
	near(t, "log_softmax", vals(t, s, ls), []float32{float32(math.Log(0.25)), float32(math.Log(0.75))}, 1e-6)
	near(t, "softmax", vals(t, s, s.Softmax(s.Float32([]float32{0, float32(math.Log(3))}, 2), 0)), []float32{0.25, 0.75}, 1e-6)
	g := s.Gather(a, 1, s.Int64([]int64{1, 0}, 2, 1))
	near(t, "gather", vals(t, s, g), []float32{-2, 4}, 1e-6)
	near(t, "reshape", vals(t, s, s.Reshape(a, 4)), []float32{1, -2, 4, 0.5}, 1e-6)
	near(t, "slice", vals(t, s, s.Slice(a, 1, 1, 2)), []float32{-2, 0.5}, 1e-6)
	near(t, "slicestep", vals(t, s, s.SliceStep(s.Reshape(a, 4), 0, 0, 4, 2)), []float32{1, 4}, 1e-6)
	near(t, "cat", vals(t, s, s.Cat(0, a, b)), []float32{1, -2, 4, 0.5, 2, 2, -1, 4}, 1e-6)
	near(t, "stack", vals(t, s, s.Stack(1, s.Reshape(a, 4), s.Reshape(b, 4))), []float32{1, 2, -2, 2, 4, -1, 0.5, 4}, 1e-6)
	near(t, "transpose", vals(t, s, s.Transpose(a, 0, 1)), []float32{1, 4, -2, 0.5}, 1e-6)
	// [[1,-2],[4,.5]] @ [[2,2],[-1,4]] = [[1*2+(-2)(-1), 1*2+(-2)4], [4*2+.5*(-1), 4*2+.5*4]]
	near(t, "matmul", vals(t, s, s.Matmul(a, b)), []float32{4, -6, 7.5, 10}, 1e-6)
	gt := s.Gt(a, b)
	bs, err := gt.Bools()
	if err != nil || bs[0] || bs[1] || !bs[2] || bs[3] {
		t.Fatalf("gt = %v %v, want [false false true false]", bs, err)
	}
	near(t, "where", vals(t, s, s.Where(gt, a, b)), []float32{2, 2, 4, 4}, 1e-6)
	le, _ := s.LeScalar(a, 1).Bools()
	if !le[0] || !le[1] || le[2] || !le[3] {
		t.Fatalf("le 1 = %v", le)
	}
	d := s.Detach(a)
	if d.RequiresGrad() {
		t.Fatal("detach kept requires_grad")
	}
	if v, err := s.Sum(a).Item(); err != nil || v != 3.5 {
		t.Fatalf("item = %v, %v", v, err)
	}
}

func TestShapeMismatchIsGoError(t *testing.T) {
	s := NewScope()
	defer s.Close()
	a := s.Float32([]float32{1, 2, 3}, 3)
	b := s.Float32([]float32{1, 2}, 2)
	c := s.Add(a, b)
	if c != nil {
		t.Fatal("add of mismatched shapes returned a tensor")
	}
	err := s.Err()
	if err == nil {
		t.Fatal("no error for mismatched shapes")
	}
	// libtorch's own words for a broadcasting failure.
	if !strings.Contains(err.Error(), "must match the size of tensor b") {
		t.Fatalf("error does not carry libtorch's message: %v", err)
	}
	// The scope stays failed: later ops are no-ops.
	if s.Neg(a) != nil || s.Err() != err {
		t.Fatal("ops after a failure ran or replaced the error")
	}
	if _, err := FromFloat32([]float32{1, 2, 3}, 2, 2); err == nil {
		t.Fatal("3 values accepted for shape [2 2]")
	}
}

func TestDeviceParsing(t *testing.T) {
	if d, err := ParseDevice("cpu"); err != nil || d != CPU {
		t.Fatalf("cpu: %v %v", d, err)
	}
	_, err := ParseDevice("cuda:0")
	if BuildKind == "cpu" && (err == nil || !strings.Contains(err.Error(), "make cuda")) {
		t.Fatalf("cuda:0 in a CPU build: %v", err)
	}
	for _, bad := range []string{"gpu", "cuda:x", "cuda:-1"} {
		if _, err := ParseDevice(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
	if dt, err := ParseDType("bf16"); err != nil || dt != BFloat16 {
		t.Fatal("bf16")
	}
}

func TestDTypeConversionAndBytes(t *testing.T) {
	s := NewScope()
	defer s.Close()
	a := s.Float32([]float32{1.5, -2, 3}, 3)
	i := s.To(a, CPU, Int64)
	iv, err := i.Int64s()
	if err != nil || iv[0] != 1 || iv[1] != -2 || iv[2] != 3 {
		t.Fatalf("to i64 = %v %v", iv, err)
	}
	h := s.To(a, CPU, Float16)
	b, err := h.Bytes(Float16)
	// 1.5 = 0x3E00, -2 = 0xC000, 3 = 0x4200 (little endian)
	want := []byte{0x00, 0x3E, 0x00, 0xC0, 0x00, 0x42}
	if err != nil || string(b) != string(want) {
		t.Fatalf("f16 bytes = %x %v, want %x", b, err, want)
	}
	if h.DType() != Float16 || h.Device() != CPU {
		t.Fatal("meta")
	}
}
