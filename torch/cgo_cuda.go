//go:build cuda

package torch

// The CUDA build (`make cuda`, Go build tag `cuda`) links the shim built
// against the CUDA libtorch in $LIBTORCH.

// #cgo CFLAGS: -I${SRCDIR}/../cgo
// #cgo LDFLAGS: -L${SRCDIR}/../build/cuda -lagentrl -Wl,-rpath,${SRCDIR}/../build/cuda -Wl,-rpath,$ORIGIN/../lib
import "C"

// BuildKind names the libtorch flavour this binary was linked against.
const BuildKind = "cuda"
