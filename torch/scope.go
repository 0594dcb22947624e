package torch

// #include "agentrl.h"
import "C"

import "unsafe"

// Scope owns the tensors created through it and frees them all on Close,
// except those handed out with Keep. It also carries the first error of a
// chain of ops: once an op fails, later ops return nil and do nothing, and
// Err reports the failure, so a loss reads like its formula:
//
//	ratio := s.Exp(s.Sub(logp, oldLogp))
//	loss := s.Neg(s.MaskedMean(s.Minimum(s.Mul(ratio, adv), s.Mul(s.Clamp(ratio, 1-eps, 1+eps), adv)), mask))
//	if err := s.Err(); err != nil { ... }
//
// A scope belongs to one device: the tensors it makes from Go data are made
// there, so the data a loss combines with a model's outputs is where the
// model is, whatever that is (a CPU tensor meeting a CUDA one is an error).
type Scope struct {
	dev   Device
	owned []*Tensor
	err   error
}

// NewScope returns an empty scope on the CPU.
func NewScope() *Scope { return &Scope{dev: CPU} }

// NewScopeOn returns an empty scope whose tensors are made on dev: open
// it on the device of the model whose outputs its ops meet.
func NewScopeOn(dev Device) *Scope { return &Scope{dev: dev} }

// Device is where the scope makes its tensors.
func (s *Scope) Device() Device { return s.dev }

// Err is the first error of any op in the scope.
func (s *Scope) Err() error { return s.err }

// Close frees every tensor the scope still owns.
func (s *Scope) Close() {
	for _, t := range s.owned {
		t.Free()
	}
	s.owned = nil
}

// Keep releases t from the scope: Close will not free it and the caller
// owns it.
func (s *Scope) Keep(t *Tensor) *Tensor {
	for i, o := range s.owned {
		if o == t {
			s.owned = append(s.owned[:i], s.owned[i+1:]...)
			break
		}
	}
	return t
}

// Own adds tensors made elsewhere to the scope, to be freed on Close.
func (s *Scope) Own(ts ...*Tensor) {
	for _, t := range ts {
		if t != nil {
			s.owned = append(s.owned, t)
		}
	}
}

// Adopt takes a (tensor, error) pair from a constructor: the tensor joins
// the scope, the error becomes the scope's error.
func (s *Scope) Adopt(t *Tensor, err error) *Tensor {
	if err != nil {
		s.fail(err)
		return nil
	}
	s.Own(t)
	return t
}

func (s *Scope) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// ready checks the inputs of an op: false when the scope already failed
// or an input is nil.
func (s *Scope) ready(op string, ts ...*Tensor) bool {
	if s.err != nil {
		return false
	}
	for _, t := range ts {
		if t == nil || t.h == nil {
			s.fail(&Error{Op: op, Msg: "input tensor is nil or freed"})
			return false
		}
	}
	return true
}

func (s *Scope) result(op string, rc C.int, out C.ar_tensor, msg *C.char) *Tensor {
	if err := check(op, rc, msg); err != nil {
		s.fail(err)
		return nil
	}
	t := wrap(out)
	s.owned = append(s.owned, t)
	return t
}

// Float32 makes an f32 tensor of the given shape on the scope's device
// (no shape: a scalar, which needs one value).
func (s *Scope) Float32(data []float32, shape ...int64) *Tensor {
	if s.err != nil {
		return nil
	}
	return s.Adopt(fromData(unsafe.Pointer(unsafe.SliceData(data)), len(data), Float32, s.dev, shape))
}

// Scalar makes a zero-dimensional f32 tensor holding x on the scope's
// device.
func (s *Scope) Scalar(x float32) *Tensor { return s.Float32([]float32{x}) }

// Int64 makes an i64 tensor on the scope's device.
func (s *Scope) Int64(data []int64, shape ...int64) *Tensor {
	if s.err != nil {
		return nil
	}
	return s.Adopt(fromData(unsafe.Pointer(unsafe.SliceData(data)), len(data), Int64, s.dev, shape))
}

// Bool makes a bool tensor on the scope's device.
func (s *Scope) Bool(data []bool, shape ...int64) *Tensor {
	if s.err != nil {
		return nil
	}
	return s.Adopt(fromBools(data, s.dev, shape))
}

// To converts t to another device and dtype in the scope.
func (s *Scope) To(t *Tensor, dev Device, dt DType) *Tensor {
	if !s.ready("to", t) {
		return nil
	}
	return s.Adopt(t.To(dev, dt))
}
