package trainer

import (
	"fmt"
	"os"
	"syscall"
	"testing"

	"github.com/agentrl/agentrl/torch/torchtest"
)

// pinnedKernels are the kernel choices this package's tests run with, so
// that the pinned figures (pinned_test.go) do not depend on the CPU:
// OpenBLAS picks its f32 matrix-product kernels, and ATen its vectorised
// kernels, from the CPU's features when the libraries load, and each
// choice rounds differently (an AVX-512 bf16 CPU gets OpenBLAS's
// Cooperlake kernels, which moved the figures in their last digits). AVX2
// with FMA kernels run on every x86-64 CPU the project supports. The
// project's own decode kernels (cgo/decode.cpp) are chosen the same way,
// by instruction set, so they are off: rollouts decode with libtorch's
// step, which every CPU runs (the figures recorded with the AVX-512 kernels
// differed on an AVX2-only CPU in their 8th digit).
var pinnedKernels = [][2]string{{"OPENBLAS_CORETYPE", "Haswell"}, {"ATEN_CPU_CAPABILITY", "avx2"}, {"AGENTRL_CPU_KERNELS", "off"}}

func TestMain(m *testing.M) {
	// Both libraries read these once, at load, so a change re-executes
	// the test binary before anything else runs.
	changed := false
	for _, kv := range pinnedKernels {
		if os.Getenv(kv[0]) != kv[1] {
			changed = true
			if err := os.Setenv(kv[0], kv[1]); err != nil {
				fmt.Fprintln(os.Stderr, kv[0], err)
				os.Exit(2)
			}
		}
	}
	if changed {
		exe, err := os.Executable()
		if err == nil {
			err = syscall.Exec(exe, os.Args, os.Environ())
		}
		fmt.Fprintln(os.Stderr, "re-executing with pinned kernels:", err)
		os.Exit(2)
	}
	torchtest.Main(m)
}
