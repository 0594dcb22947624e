package torch

import (
	"strings"
	"testing"
)

// The NCCL backend's Options embed ncclConfig_t, sized by the nccl.h the
// shim was compiled with but written by libtorch: a group is refused
// unless the header's NCCL major.minor is the one libtorch was built with.
// torch::cuda::nccl::version() encodes that as major<<32 | minor<<16 |
// patch (torch/csrc/cuda/nccl.cpp; Python's torch.cuda.nccl.version()
// decodes it the same way).
func TestNCCLHeaderCheck(t *testing.T) {
	if err := Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	v := func(major, minor, patch uint64) uint64 { return major<<32 | minor<<16 | patch }
	for _, c := range []struct {
		major, minor int
		torch        uint64
		want         string // "" is no error
	}{
		{2, 27, v(2, 27, 3), ""},
		{2, 27, v(2, 27, 7), ""}, // patches share the layout
		{2, 28, v(2, 27, 3), "NCCL 2.27.3"},
		{2, 21, v(2, 26, 2), "nccl.h of NCCL 2.21"},
		{3, 0, v(2, 28, 9), "NCCL 2.28.9"},
		{2, 27, 0, "without NCCL"},
		{2, 27, v(1, 0, 0), "an NCCL it does not name"},
	} {
		err := ncclHeaderCheck(c.major, c.minor, c.torch)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("nccl.h %d.%d, libtorch %#x: %v", c.major, c.minor, c.torch, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("nccl.h %d.%d, libtorch %#x: error %v, want one saying %q", c.major, c.minor, c.torch, err, c.want)
		}
	}
}

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
