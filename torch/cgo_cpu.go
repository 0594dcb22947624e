//go:build !cuda

package torch

// The CPU build links the shim built by `make` against Debian's libtorch.

// #cgo CFLAGS: -I${SRCDIR}/../cgo
// #cgo LDFLAGS: -L${SRCDIR}/../build/cpu -lagentrl -Wl,-rpath,${SRCDIR}/../build/cpu -Wl,-rpath,$ORIGIN/../lib
import "C"

// BuildKind names the libtorch flavour this binary was linked against.
const BuildKind = "cpu"
