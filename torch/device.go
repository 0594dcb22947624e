package torch

import (
	"fmt"
	"strconv"
	"strings"
)

// Device is where a tensor lives: the CPU, one CUDA device, or libtorch's
// meta device.
type Device struct {
	CUDA  bool
	Index int
	// Meta tensors have shapes, dtypes and a device but no data: every op
	// computes its result's shape and checks its inputs' devices, nothing
	// more. Tests use it as a second device on machines without a GPU: a
	// CPU tensor that meets a meta one fails exactly as it would meet a
	// CUDA one ("Expected all tensors to be on the same device"). Reading
	// a meta tensor's values is an error.
	Meta bool
}

// CPU is the host device.
var CPU = Device{}

// Meta is libtorch's meta device (shapes only, no data).
var Meta = Device{Meta: true}

// CUDA returns the device cuda:i.
func CUDA(i int) Device { return Device{CUDA: true, Index: i} }

// ParseDevice reads "cpu", "cuda" (= cuda:0) or "cuda:N". A CUDA device in a
// CPU build is an error that says how to get a CUDA build.
func ParseDevice(s string) (Device, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	switch {
	case s == "cpu" || s == "":
		return CPU, nil
	case s == "cuda" || strings.HasPrefix(s, "cuda:"):
		i := 0
		if s != "cuda" {
			n, err := strconv.Atoi(s[len("cuda:"):])
			if err != nil || n < 0 {
				return CPU, fmt.Errorf("device %q: the CUDA index must be a non-negative integer", s)
			}
			i = n
		}
		if BuildKind != "cuda" {
			return CPU, fmt.Errorf("device %q: this agentrl binary is a CPU build; build the CUDA one with `make cuda` (see README)", s)
		}
		n, err := CUDADeviceCount()
		if err != nil {
			return CPU, err
		}
		if n == 0 {
			return CPU, fmt.Errorf("device %q: CUDA is not available: this CUDA build of agentrl sees no CUDA device (no GPU, no driver, or CUDA_VISIBLE_DEVICES hides them); use --device cpu", s)
		}
		if i >= n {
			return CPU, fmt.Errorf("device %q: only %d CUDA device(s) visible", s, n)
		}
		return CUDA(i), nil
	}
	return CPU, fmt.Errorf("device %q: want cpu, cuda or cuda:N", s)
}

// String gives "cpu", "cuda:N" or "meta".
func (d Device) String() string {
	switch {
	case d.CUDA:
		return "cuda:" + strconv.Itoa(d.Index)
	case d.Meta:
		return "meta"
	}
	return "cpu"
}

// The device codes of the C ABI: N >= 0 is cuda:N (cgo/agentrl.h).
const (
	cpuCode  = -1
	metaCode = -2
)

func (d Device) code() int {
	switch {
	case d.CUDA:
		return d.Index
	case d.Meta:
		return metaCode
	}
	return cpuCode
}

func deviceFromCode(c int) Device {
	switch {
	case c >= 0:
		return CUDA(c)
	case c == metaCode:
		return Meta
	}
	return CPU
}

// DType is an element type.
type DType int

// The element types the ABI knows (values match cgo/agentrl.h).
const (
	Float32 DType = iota
	Float16
	BFloat16
	Int64
	Int32
	Bool
	Uint8
	Float64
)

var dtypeNames = map[DType]string{Float32: "f32", Float16: "f16", BFloat16: "bf16", Int64: "i64", Int32: "i32", Bool: "bool", Uint8: "u8", Float64: "f64"}

// String gives the short name (f32, bf16, ...).
func (d DType) String() string {
	if s, ok := dtypeNames[d]; ok {
		return s
	}
	return fmt.Sprintf("dtype(%d)", int(d))
}

// ParseDType reads f32/float32, f16/float16, bf16/bfloat16, i64, i32, bool, u8, f64.
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "f32", "float32", "float":
		return Float32, nil
	case "f16", "float16", "half":
		return Float16, nil
	case "bf16", "bfloat16":
		return BFloat16, nil
	case "i64", "int64", "long":
		return Int64, nil
	case "i32", "int32", "int":
		return Int32, nil
	case "bool":
		return Bool, nil
	case "u8", "uint8":
		return Uint8, nil
	case "f64", "float64", "double":
		return Float64, nil
	}
	return Float32, fmt.Errorf("dtype %q: want f32, f16, bf16, i64, i32, bool, u8 or f64", s)
}

// Size is the number of bytes of one element.
func (d DType) Size() int {
	switch d {
	case Float32, Int32:
		return 4
	case Float16, BFloat16:
		return 2
	case Int64, Float64:
		return 8
	}
	return 1
}
