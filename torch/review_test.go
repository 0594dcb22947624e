package torch

import "testing"

// A CUDA model lets cuBLAS run f32 matrix products on TF32 tensor cores.
// libtorch keeps that setting for the whole process, and from 2.9
// set_float32_matmul_precision("high") also sets oneDNN's f32 products on
// the CPU to TF32: what the model sets must leave the CPU's alone.
func TestCUDATF32LeavesCPUMatmulsAlone(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	before, err := cpuF32MatmulReduced()
	if err != nil {
		t.Fatal(err)
	}
	if before {
		t.Fatal("CPU f32 matrix products already run reduced before the setting")
	}
	if err := allowCUDATF32(); err != nil {
		t.Fatal(err)
	}
	after, err := cpuF32MatmulReduced()
	if err != nil {
		t.Fatal(err)
	}
	if after {
		t.Error("after a CUDA model's TF32 setting, f32 matrix products on the CPU run in reduced precision")
	}
}
