package safetensors

import (
	"path/filepath"
	"testing"
)

// benchFile writes a file with one tensor of n values of dtype dt.
func benchFile(b *testing.B, dt DType, n int) string {
	b.Helper()
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i%1000) * 0.001
	}
	ten, err := FromFloat32s("w", dt, []int64{int64(n)}, v)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "b.safetensors")
	if err := Write(path, []Tensor{ten}, nil); err != nil {
		b.Fatal(err)
	}
	return path
}

// benchFloat32s measures reading and converting a 4M-element tensor.
func benchFloat32s(b *testing.B, dt DType) {
	const n = 1 << 22
	r, err := Open(benchFile(b, dt, n))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.SetBytes(n * int64(dt.Size()))
	for b.Loop() {
		if _, err := r.Float32s("w"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFloat32sF32(b *testing.B)  { benchFloat32s(b, F32) }
func BenchmarkFloat32sBF16(b *testing.B) { benchFloat32s(b, BF16) }
func BenchmarkFloat32sF16(b *testing.B)  { benchFloat32s(b, F16) }

// BenchmarkFromFloat32sBF16 measures encoding 4M float32 values as bfloat16.
func BenchmarkFromFloat32sBF16(b *testing.B) {
	v := make([]float32, 1<<22)
	b.SetBytes(int64(len(v)) * 4)
	for b.Loop() {
		if _, err := FromFloat32s("w", BF16, []int64{int64(len(v))}, v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWrite measures an atomic write of a 16 MiB tensor (fsync included).
func BenchmarkWrite(b *testing.B) {
	ten := Tensor{Name: "w", DType: U8, Shape: []int64{1 << 24}, Data: make([]byte, 1<<24)}
	path := filepath.Join(b.TempDir(), "w.safetensors")
	b.SetBytes(1 << 24)
	for b.Loop() {
		if err := Write(path, []Tensor{ten}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
