package torch

// #include <stdlib.h>
// #include "agentrl.h"
import "C"

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Tensor is a handle on a libtorch tensor. Its memory is not seen by Go's
// garbage collector: free it with Free, or create it in a Scope. A tensor
// that is collected without having been freed is counted as a leak (and
// released).
type Tensor struct {
	h C.ar_tensor
}

var (
	liveTensors   atomic.Int64
	leakedTensors atomic.Int64
)

// LiveTensors is the number of tensor handles created and not yet freed.
func LiveTensors() int64 { return liveTensors.Load() }

// LeakedTensors counts tensors the garbage collector found unfreed.
func LeakedTensors() int64 { return leakedTensors.Load() }

func wrap(h C.ar_tensor) *Tensor {
	t := &Tensor{h: h}
	liveTensors.Add(1)
	runtime.SetFinalizer(t, func(t *Tensor) {
		if t.h != nil {
			leakedTensors.Add(1)
			t.release()
		}
	})
	return t
}

func (t *Tensor) release() {
	C.ar_tensor_free(t.h)
	t.h = nil
	liveTensors.Add(-1)
}

// Free releases the tensor; freeing twice or freeing nil is a no-op.
func (t *Tensor) Free() {
	if t == nil || t.h == nil {
		return
	}
	runtime.SetFinalizer(t, nil)
	t.release()
}

func (t *Tensor) handle(op string) (C.ar_tensor, error) {
	if t == nil || t.h == nil {
		return nil, fmt.Errorf("torch %s: tensor is nil or freed", op)
	}
	return t.h, nil
}

// tensorHandles copies the tensors' handles into C memory for a call that
// takes an array of them; free releases it.
func tensorHandles(op string, ts []*Tensor) (*C.ar_tensor, func(), error) {
	n := max(len(ts), 1)
	hs := (*C.ar_tensor)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.ar_tensor(nil)))))
	ha := unsafe.Slice(hs, n)
	for i, t := range ts {
		h, err := t.handle(op)
		if err != nil {
			C.free(unsafe.Pointer(hs))
			return nil, nil, err
		}
		ha[i] = h
	}
	return hs, func() { C.free(unsafe.Pointer(hs)) }, nil
}

func cShape(shape []int64) (*C.int64_t, C.int) {
	if len(shape) == 0 {
		return nil, 0
	}
	return (*C.int64_t)(unsafe.Pointer(&shape[0])), C.int(len(shape))
}

func numel(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return n
}

func fromData(p unsafe.Pointer, n int, dt DType, dev Device, shape []int64) (*Tensor, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	if int64(n) != numel(shape) {
		return nil, fmt.Errorf("torch from_data: %d values do not fill shape %v", n, shape)
	}
	var out C.ar_tensor
	var msg *C.char
	sp, nd := cShape(shape)
	if err := check("from_data", C.ar_tensor_from_data(p, C.int(dt), sp, nd, C.int(dev.code()), &out, &msg), msg); err != nil {
		return nil, err
	}
	return wrap(out), nil
}

// FromFloat32 copies data into a new f32 CPU tensor of the given shape.
func FromFloat32(data []float32, shape ...int64) (*Tensor, error) {
	return fromData(unsafe.Pointer(unsafe.SliceData(data)), len(data), Float32, CPU, shape)
}

// FromFloat64 copies data into a new f64 CPU tensor.
func FromFloat64(data []float64, shape ...int64) (*Tensor, error) {
	return fromData(unsafe.Pointer(unsafe.SliceData(data)), len(data), Float64, CPU, shape)
}

// FromInt64 copies data into a new i64 CPU tensor.
func FromInt64(data []int64, shape ...int64) (*Tensor, error) {
	return fromData(unsafe.Pointer(unsafe.SliceData(data)), len(data), Int64, CPU, shape)
}

// FromInt32 copies data into a new i32 CPU tensor.
func FromInt32(data []int32, shape ...int64) (*Tensor, error) {
	return fromData(unsafe.Pointer(unsafe.SliceData(data)), len(data), Int32, CPU, shape)
}

// FromBool copies data into a new bool CPU tensor.
func FromBool(data []bool, shape ...int64) (*Tensor, error) {
	return fromBools(data, CPU, shape)
}

func fromBools(data []bool, dev Device, shape []int64) (*Tensor, error) {
	b := make([]uint8, len(data))
	for i, v := range data {
		if v {
			b[i] = 1
		}
	}
	return fromData(unsafe.Pointer(unsafe.SliceData(b)), len(b), Bool, dev, shape)
}

// FromBytes copies raw little-endian element bytes of dtype dt into a new
// tensor on dev (used to load checkpoints without conversion).
func FromBytes(data []byte, dt DType, dev Device, shape ...int64) (*Tensor, error) {
	if len(data) != int(numel(shape))*dt.Size() {
		return nil, fmt.Errorf("torch from_bytes: %d bytes do not fill %v of %s", len(data), shape, dt)
	}
	return fromData(unsafe.Pointer(unsafe.SliceData(data)), int(numel(shape)), dt, dev, shape)
}

// Zeros makes a tensor of zeros.
func Zeros(dt DType, dev Device, shape ...int64) (*Tensor, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	var out C.ar_tensor
	var msg *C.char
	sp, nd := cShape(shape)
	if err := check("zeros", C.ar_tensor_zeros(C.int(dt), sp, nd, C.int(dev.code()), &out, &msg), msg); err != nil {
		return nil, err
	}
	return wrap(out), nil
}

// Shape returns the tensor's dimensions.
func (t *Tensor) Shape() ([]int64, error) {
	h, err := t.handle("shape")
	if err != nil {
		return nil, err
	}
	var dims [8]C.int64_t
	var nd C.int
	var msg *C.char
	if err := check("shape", C.ar_tensor_shape(h, &dims[0], 8, &nd, &msg), msg); err != nil {
		return nil, err
	}
	s := make([]int64, int(nd))
	for i := range s {
		s[i] = int64(dims[i])
	}
	return s, nil
}

// Numel is the number of elements (0 on error).
func (t *Tensor) Numel() int64 {
	s, err := t.Shape()
	if err != nil {
		return 0
	}
	return numel(s)
}

func (t *Tensor) meta() (dt DType, dev Device, rg bool, err error) {
	h, err := t.handle("meta")
	if err != nil {
		return 0, CPU, false, err
	}
	var d, v, r C.int
	var msg *C.char
	if err := check("meta", C.ar_tensor_meta(h, &d, &v, &r, &msg), msg); err != nil {
		return 0, CPU, false, err
	}
	return DType(d), deviceFromCode(int(v)), r != 0, nil
}

// DType is the element type.
func (t *Tensor) DType() DType { d, _, _, _ := t.meta(); return d }

// Device is where the tensor lives.
func (t *Tensor) Device() Device { _, d, _, _ := t.meta(); return d }

// RequiresGrad reports whether autograd tracks the tensor.
func (t *Tensor) RequiresGrad() bool { _, _, r, _ := t.meta(); return r }

func (t *Tensor) copyOut(dt DType, p unsafe.Pointer, nbytes int) error {
	h, err := t.handle("copy_out")
	if err != nil {
		return err
	}
	var msg *C.char
	return check("copy_out", C.ar_tensor_copy_out(h, C.int(dt), p, C.size_t(nbytes), &msg), msg)
}

// Float32s reads the elements back (converted to f32, row-major).
func (t *Tensor) Float32s() ([]float32, error) {
	s, err := t.Shape()
	if err != nil {
		return nil, err
	}
	out := make([]float32, numel(s))
	return out, t.copyOut(Float32, unsafe.Pointer(unsafe.SliceData(out)), len(out)*4)
}

// Float64s reads the elements back as f64.
func (t *Tensor) Float64s() ([]float64, error) {
	s, err := t.Shape()
	if err != nil {
		return nil, err
	}
	out := make([]float64, numel(s))
	return out, t.copyOut(Float64, unsafe.Pointer(unsafe.SliceData(out)), len(out)*8)
}

// Int64s reads the elements back as i64.
func (t *Tensor) Int64s() ([]int64, error) {
	s, err := t.Shape()
	if err != nil {
		return nil, err
	}
	out := make([]int64, numel(s))
	return out, t.copyOut(Int64, unsafe.Pointer(unsafe.SliceData(out)), len(out)*8)
}

// Bools reads the elements back as booleans.
func (t *Tensor) Bools() ([]bool, error) {
	s, err := t.Shape()
	if err != nil {
		return nil, err
	}
	b := make([]uint8, numel(s))
	if err := t.copyOut(Bool, unsafe.Pointer(unsafe.SliceData(b)), len(b)); err != nil {
		return nil, err
	}
	out := make([]bool, len(b))
	for i, v := range b {
		out[i] = v != 0
	}
	return out, nil
}

// Bytes reads the raw elements in dtype dt (for writing checkpoints).
func (t *Tensor) Bytes(dt DType) ([]byte, error) {
	s, err := t.Shape()
	if err != nil {
		return nil, err
	}
	out := make([]byte, int(numel(s))*dt.Size())
	return out, t.copyOut(dt, unsafe.Pointer(unsafe.SliceData(out)), len(out))
}

// CopyBytes writes the elements, converted to dt, into dst, which must
// hold exactly their bytes: Bytes without allocating.
func (t *Tensor) CopyBytes(dt DType, dst []byte) error {
	s, err := t.Shape()
	if err != nil {
		return err
	}
	if want := int(numel(s)) * dt.Size(); len(dst) != want {
		return fmt.Errorf("copy bytes: %d bytes given for %v elements of %s (%d bytes)", len(dst), s, dt, want)
	}
	if len(dst) == 0 {
		return nil
	}
	return t.copyOut(dt, unsafe.Pointer(unsafe.SliceData(dst)), len(dst))
}

// Item reads a one-element tensor as a float64.
func (t *Tensor) Item() (float64, error) {
	h, err := t.handle("item")
	if err != nil {
		return 0, err
	}
	var v C.double
	var msg *C.char
	return float64(v), check("item", C.ar_tensor_item(h, &v, &msg), msg)
}

// To returns a copy on dev with element type dt (the same handle's data
// when nothing changes); the caller owns the result.
func (t *Tensor) To(dev Device, dt DType) (*Tensor, error) {
	h, err := t.handle("to")
	if err != nil {
		return nil, err
	}
	var out C.ar_tensor
	var msg *C.char
	if err := check("to", C.ar_tensor_to(h, C.int(dev.code()), C.int(dt), &out, &msg), msg); err != nil {
		return nil, err
	}
	return wrap(out), nil
}

// SetRequiresGrad turns autograd tracking of a leaf tensor on or off.
func (t *Tensor) SetRequiresGrad(on bool) error {
	h, err := t.handle("set_requires_grad")
	if err != nil {
		return err
	}
	var msg *C.char
	return check("set_requires_grad", C.ar_tensor_set_requires_grad(h, cbool(on), &msg), msg)
}

// Backward runs autograd from this scalar tensor, accumulating gradients
// into the leaves that require them.
func (t *Tensor) Backward() error {
	h, err := t.handle("backward")
	if err != nil {
		return err
	}
	var msg *C.char
	return check("backward", C.ar_tensor_backward(h, &msg), msg)
}

// Grad returns the accumulated gradient (a new handle the caller frees), or
// nil when there is none.
func (t *Tensor) Grad() (*Tensor, error) {
	h, err := t.handle("grad")
	if err != nil {
		return nil, err
	}
	var out C.ar_tensor
	var msg *C.char
	if err := check("grad", C.ar_tensor_grad(h, &out, &msg), msg); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, nil
	}
	return wrap(out), nil
}

// ZeroGrad drops the accumulated gradient.
func (t *Tensor) ZeroGrad() error {
	h, err := t.handle("zero_grad")
	if err != nil {
		return err
	}
	var msg *C.char
	return check("zero_grad", C.ar_tensor_zero_grad(h, &msg), msg)
}

// Checksum returns the sum and the sum of squares of t's elements,
// accumulated in float64 in element order on one thread: equal tensors
// give equal bits whatever the thread count, so ranks can compare weights.
func (t *Tensor) Checksum() (sum, sumSq float64, err error) {
	h, err := t.handle("checksum")
	if err != nil {
		return 0, 0, err
	}
	var s, q C.double
	var msg *C.char
	if err := check("checksum", C.ar_tensor_checksum(h, &s, &q, &msg), msg); err != nil {
		return 0, 0, err
	}
	return float64(s), float64(q), nil
}

// Pinned returns a page-locked host copy for fast GPU transfers (a plain
// host copy in CPU builds).
func (t *Tensor) Pinned() (*Tensor, error) {
	h, err := t.handle("pin")
	if err != nil {
		return nil, err
	}
	var out C.ar_tensor
	var msg *C.char
	if err := check("pin", C.ar_tensor_pin(h, &out, &msg), msg); err != nil {
		return nil, err
	}
	return wrap(out), nil
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}
