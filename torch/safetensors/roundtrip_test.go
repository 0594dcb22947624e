package safetensors

import (
	"bytes"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/atomicfile"
)

// mustFloat builds a float tensor or fails the test.
func mustFloat(t *testing.T, name string, dt DType, shape []int64, v []float32) Tensor {
	t.Helper()
	ten, err := FromFloat32s(name, dt, shape, v)
	if err != nil {
		t.Fatal(err)
	}
	return ten
}

func TestRoundTripEveryDType(t *testing.T) {
	tensors := []Tensor{
		// 1.0 = 0x3F800000, -2.0 = 0xC0000000, 0.1 = 0x3DCCCCCD.
		mustFloat(t, "f32", F32, []int64{3}, []float32{1, -2, 0.1}),
		// 1 + 2^-11 is a tie that rounds to the even 0x3C00.
		mustFloat(t, "f16", F16, []int64{5}, []float32{1, -2, pow2(-24), 65504, 1 + pow2(-11)}),
		// 1 + 3*2^-8 ties up to 0x3F82; 0.1 rounds to 0x3DCD.
		mustFloat(t, "bf16", BF16, []int64{2, 2}, []float32{1, -2, 1 + 3*pow2(-8), 0.1}),
		// 0.5 = 0x3FE0000000000000, -3 = 0xC008000000000000.
		mustFloat(t, "f64", F64, []int64{2}, []float32{0.5, -3}),
		// Scalar (shape []) and a zero-element tensor.
		mustFloat(t, "scalar", F32, []int64{}, []float32{3}),
		mustFloat(t, "empty", F32, []int64{0, 4}, nil),
		// -1 and 2^40.
		{Name: "i64", DType: I64, Shape: []int64{2}, Data: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1, 0, 0}},
		// -2 and 7.
		{Name: "i32", DType: I32, Shape: []int64{2}, Data: []byte{0xfe, 0xff, 0xff, 0xff, 7, 0, 0, 0}},
		{Name: "u8", DType: U8, Shape: []int64{2}, Data: []byte{0, 255}},
		{Name: "bool", DType: BOOL, Shape: []int64{3}, Data: []byte{1, 0, 1}},
	}
	wantBytes := map[string][]byte{
		"f32":    {0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 0xcd, 0xcc, 0xcc, 0x3d},
		"f16":    {0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0xff, 0x7b, 0x00, 0x3c},
		"bf16":   {0x80, 0x3f, 0x00, 0xc0, 0x82, 0x3f, 0xcd, 0x3d},
		"f64":    {0, 0, 0, 0, 0, 0, 0xe0, 0x3f, 0, 0, 0, 0, 0, 0, 0x08, 0xc0},
		"scalar": {0, 0, 0x40, 0x40},
		"empty":  {},
		"i64":    tensors[6].Data,
		"i32":    tensors[7].Data,
		"u8":     {0, 255},
		"bool":   {1, 0, 1},
	}
	wantFloats := map[string][]float32{
		"f32": {1, -2, 0.1},
		"f16": {1, -2, pow2(-24), 65504, 1},
		// 0x3F82 = 1 + 2/128; 0x3DCD0000 = (1 + 77/128) * 2^-4 = 0.10009765625.
		"bf16":   {1, -2, 1.015625, 0.10009765625},
		"f64":    {0.5, -3},
		"scalar": {3},
		"empty":  {},
	}
	path := filepath.Join(t.TempDir(), "all.safetensors")
	if err := Write(path, tensors, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	wantNames := []string{"bf16", "bool", "empty", "f16", "f32", "f64", "i32", "i64", "scalar", "u8"}
	if got := r.Names(); !reflect.DeepEqual(got, wantNames) {
		t.Errorf("Names = %v, want %v", got, wantNames)
	}
	if got := r.Metadata(); !reflect.DeepEqual(got, map[string]string{"format": "pt"}) {
		t.Errorf("Metadata = %v", got)
	}
	for _, ten := range tensors {
		info, ok := r.Info(ten.Name)
		if !ok || info.DType != ten.DType || !reflect.DeepEqual(info.Shape, ten.Shape) || info.File != path || info.Name != ten.Name {
			t.Errorf("Info(%s) = %+v, %v", ten.Name, info, ok)
		}
		b, err := r.Bytes(ten.Name)
		if err != nil || !bytes.Equal(b, wantBytes[ten.Name]) {
			t.Errorf("Bytes(%s) = % x, %v; want % x", ten.Name, b, err, wantBytes[ten.Name])
		}
		f, err := r.Float32s(ten.Name)
		if want, isFloat := wantFloats[ten.Name]; isFloat {
			if err != nil || !reflect.DeepEqual(f, want) {
				t.Errorf("Float32s(%s) = %v, %v; want %v", ten.Name, f, err, want)
			}
		} else if err == nil || !strings.Contains(err.Error(), ten.Name) {
			t.Errorf("Float32s(%s) on %s: err %v, want an error naming it", ten.Name, ten.DType, err)
		}
	}
	if _, ok := r.Info("nope"); ok {
		t.Error("Info(nope) found a tensor")
	}
	if _, err := r.Bytes("nope"); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("Bytes(nope): %v", err)
	}
}

// NaN and infinities survive a 16-bit round trip.
func TestRoundTripSpecialValues(t *testing.T) {
	in := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	for _, dt := range []DType{F16, BF16} {
		path := filepath.Join(t.TempDir(), "s.safetensors")
		if err := Write(path, []Tensor{mustFloat(t, "x", dt, []int64{3}, in)}, nil); err != nil {
			t.Fatal(err)
		}
		r, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Float32s("x")
		r.Close()
		if err != nil || !math.IsInf(float64(got[0]), 1) || !math.IsInf(float64(got[1]), -1) || got[2] == got[2] {
			t.Errorf("%s: got %v, %v; want [+Inf -Inf NaN]", dt, got, err)
		}
	}
}

// Open reads headers only: bytes changed on disk after Open are what
// Bytes returns.
func TestOpenIsLazy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lazy.safetensors")
	if err := Write(path, []Tensor{{Name: "u", DType: U8, Shape: []int64{4}, Data: []byte{1, 2, 3, 4}}}, nil); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	// The data is the last 4 bytes of the file.
	if _, err := f.WriteAt([]byte{9, 8, 7, 6}, st.Size()-4); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, err := r.Bytes("u"); err != nil || !bytes.Equal(b, []byte{9, 8, 7, 6}) {
		t.Errorf("Bytes = %v, %v; want the bytes on disk now [9 8 7 6]", b, err)
	}
}

// A folder without index or model.safetensors opens all its
// *.safetensors files together.
func TestOpenFolderOfFiles(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.safetensors")
	b := filepath.Join(dir, "b.safetensors")
	if err := Write(a, []Tensor{{Name: "x", DType: U8, Shape: []int64{1}, Data: []byte{1}}}, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	if err := Write(b, []Tensor{{Name: "y", DType: U8, Shape: []int64{1}, Data: []byte{2}}}, nil); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Names(); !reflect.DeepEqual(got, []string{"x", "y"}) {
		t.Errorf("Names = %v", got)
	}
	if info, _ := r.Info("y"); info.File != b {
		t.Errorf("y in %s, want %s", info.File, b)
	}
	if got, _ := r.Bytes("y"); !bytes.Equal(got, []byte{2}) {
		t.Errorf("Bytes(y) = %v", got)
	}
	r.Close()

	// The same name in two files is an error naming both.
	if err := Write(b, []Tensor{{Name: "x", DType: U8, Shape: []int64{1}, Data: []byte{2}}}, nil); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir)
	if err == nil || !strings.Contains(err.Error(), `"x"`) || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), b) {
		t.Errorf("duplicate tensor: err %v, want one naming x, %s and %s", err, a, b)
	}

	if _, err := Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no ") {
		t.Errorf("empty folder: err %v", err)
	}
}

// Write refuses bad tensors, naming them, and leaves the previous file
// (and no temporary file) behind.
func TestWriteRejectsBadTensors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.safetensors")
	good := []Tensor{{Name: "ok", DType: U8, Shape: []int64{1}, Data: []byte{7}}}
	if err := Write(path, good, nil); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	bad := map[string][]Tensor{
		"short":  {{Name: "short", DType: F32, Shape: []int64{2}, Data: make([]byte, 7)}},
		"odd":    {{Name: "odd", DType: "Q7", Shape: []int64{1}, Data: []byte{1}}},
		"twice":  {{Name: "twice", DType: U8, Shape: []int64{1}, Data: []byte{1}}, {Name: "twice", DType: U8, Shape: []int64{1}, Data: []byte{1}}},
		"negdim": {{Name: "negdim", DType: U8, Shape: []int64{-1}, Data: nil}},
	}
	for name, ts := range bad {
		err := Write(path, ts, nil)
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err %v, want one naming the tensor and %s", name, err, path)
		}
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("a failed Write changed the existing file")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("folder holds %d entries, want only the file", len(ents))
	}
}

// A write that fails midway leaves the previous file and no temporary.
func TestWriteAtomicFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := atomicfile.Write(path, func(w io.Writer) error {
		w.Write([]byte("partial"))
		return os.ErrInvalid
	})
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("err %v, want one naming %s", err, path)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("file holds %q, want the old content", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("folder holds %d entries, want 1", len(ents))
	}
}
