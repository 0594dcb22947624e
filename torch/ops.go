package torch

// #include <stdlib.h>
// #include "agentrl.h"
import "C"

// The differentiable ops. Every op records autograd history, broadcasts
// like PyTorch and accepts negative dims.

func (s *Scope) unary(name string, op C.int, a *Tensor) *Tensor {
	if !s.ready(name, a) {
		return nil
	}
	var out C.ar_tensor
	var msg *C.char
	return s.result(name, C.ar_unary(op, a.h, &out, &msg), out, msg)
}

func (s *Scope) binary(name string, op C.int, a, b *Tensor) *Tensor {
	if !s.ready(name, a, b) {
		return nil
	}
	var out C.ar_tensor
	var msg *C.char
	return s.result(name, C.ar_binary(op, a.h, b.h, &out, &msg), out, msg)
}

func (s *Scope) scalar(name string, op C.int, a *Tensor, x float64) *Tensor {
	if !s.ready(name, a) {
		return nil
	}
	var out C.ar_tensor
	var msg *C.char
	return s.result(name, C.ar_scalar(op, a.h, C.double(x), &out, &msg), out, msg)
}

func (s *Scope) rscalar(name string, op C.int, x float64, a *Tensor) *Tensor {
	if !s.ready(name, a) {
		return nil
	}
	var out C.ar_tensor
	var msg *C.char
	return s.result(name, C.ar_rscalar(op, C.double(x), a.h, &out, &msg), out, msg)
}

// Neg is -a.
func (s *Scope) Neg(a *Tensor) *Tensor { return s.unary("neg", C.AR_NEG, a) }

// Exp is e^a.
func (s *Scope) Exp(a *Tensor) *Tensor { return s.unary("exp", C.AR_EXP, a) }

// Log is the natural logarithm.
func (s *Scope) Log(a *Tensor) *Tensor { return s.unary("log", C.AR_LOG, a) }

// Sqrt is the square root.
func (s *Scope) Sqrt(a *Tensor) *Tensor { return s.unary("sqrt", C.AR_SQRT, a) }

// Abs is |a|.
func (s *Scope) Abs(a *Tensor) *Tensor { return s.unary("abs", C.AR_ABS, a) }

// Detach returns a tensor sharing a's data with no autograd history.
func (s *Scope) Detach(a *Tensor) *Tensor { return s.unary("detach", C.AR_DETACH, a) }

// Sigmoid is 1/(1+e^-a).
func (s *Scope) Sigmoid(a *Tensor) *Tensor { return s.unary("sigmoid", C.AR_SIGMOID, a) }

// Tanh is the hyperbolic tangent.
func (s *Scope) Tanh(a *Tensor) *Tensor { return s.unary("tanh", C.AR_TANH, a) }

// Not is the logical negation of a bool tensor.
func (s *Scope) Not(a *Tensor) *Tensor { return s.unary("logical_not", C.AR_LOGICAL_NOT, a) }

// Add is a + b.
func (s *Scope) Add(a, b *Tensor) *Tensor { return s.binary("add", C.AR_ADD, a, b) }

// Sub is a - b.
func (s *Scope) Sub(a, b *Tensor) *Tensor { return s.binary("sub", C.AR_SUB, a, b) }

// Mul is a * b.
func (s *Scope) Mul(a, b *Tensor) *Tensor { return s.binary("mul", C.AR_MUL, a, b) }

// Div is a / b.
func (s *Scope) Div(a, b *Tensor) *Tensor { return s.binary("div", C.AR_DIV, a, b) }

// Pow is a^b.
func (s *Scope) Pow(a, b *Tensor) *Tensor { return s.binary("pow", C.AR_POW, a, b) }

// Minimum is the elementwise min(a, b).
func (s *Scope) Minimum(a, b *Tensor) *Tensor { return s.binary("minimum", C.AR_MINIMUM, a, b) }

// Maximum is the elementwise max(a, b).
func (s *Scope) Maximum(a, b *Tensor) *Tensor { return s.binary("maximum", C.AR_MAXIMUM, a, b) }

// Matmul is the matrix product with PyTorch's broadcasting rules.
func (s *Scope) Matmul(a, b *Tensor) *Tensor { return s.binary("matmul", C.AR_MATMUL, a, b) }

// Eq is a == b as a bool mask.
func (s *Scope) Eq(a, b *Tensor) *Tensor { return s.binary("eq", C.AR_EQ, a, b) }

// Ne is a != b.
func (s *Scope) Ne(a, b *Tensor) *Tensor { return s.binary("ne", C.AR_NE, a, b) }

// Lt is a < b.
func (s *Scope) Lt(a, b *Tensor) *Tensor { return s.binary("lt", C.AR_LT, a, b) }

// Le is a <= b.
func (s *Scope) Le(a, b *Tensor) *Tensor { return s.binary("le", C.AR_LE, a, b) }

// Gt is a > b.
func (s *Scope) Gt(a, b *Tensor) *Tensor { return s.binary("gt", C.AR_GT, a, b) }

// Ge is a >= b.
func (s *Scope) Ge(a, b *Tensor) *Tensor { return s.binary("ge", C.AR_GE, a, b) }

// And is the logical and of two bool tensors.
func (s *Scope) And(a, b *Tensor) *Tensor { return s.binary("logical_and", C.AR_LOGICAL_AND, a, b) }

// Or is the logical or of two bool tensors.
func (s *Scope) Or(a, b *Tensor) *Tensor { return s.binary("logical_or", C.AR_LOGICAL_OR, a, b) }

// AddScalar is a + x.
func (s *Scope) AddScalar(a *Tensor, x float64) *Tensor { return s.scalar("add", C.AR_ADD, a, x) }

// SubScalar is a - x.
func (s *Scope) SubScalar(a *Tensor, x float64) *Tensor { return s.scalar("sub", C.AR_SUB, a, x) }

// MulScalar is a * x.
func (s *Scope) MulScalar(a *Tensor, x float64) *Tensor { return s.scalar("mul", C.AR_MUL, a, x) }

// DivScalar is a / x.
func (s *Scope) DivScalar(a *Tensor, x float64) *Tensor { return s.scalar("div", C.AR_DIV, a, x) }

// PowScalar is a^x.
func (s *Scope) PowScalar(a *Tensor, x float64) *Tensor { return s.scalar("pow", C.AR_POW, a, x) }

// GtScalar is a > x.
func (s *Scope) GtScalar(a *Tensor, x float64) *Tensor { return s.scalar("gt", C.AR_GT, a, x) }

// LtScalar is a < x.
func (s *Scope) LtScalar(a *Tensor, x float64) *Tensor { return s.scalar("lt", C.AR_LT, a, x) }

// GeScalar is a >= x.
func (s *Scope) GeScalar(a *Tensor, x float64) *Tensor { return s.scalar("ge", C.AR_GE, a, x) }

// LeScalar is a <= x.
func (s *Scope) LeScalar(a *Tensor, x float64) *Tensor { return s.scalar("le", C.AR_LE, a, x) }

// EqScalar is a == x.
func (s *Scope) EqScalar(a *Tensor, x float64) *Tensor { return s.scalar("eq", C.AR_EQ, a, x) }

// RSub is x - a.
func (s *Scope) RSub(x float64, a *Tensor) *Tensor { return s.rscalar("rsub", C.AR_SUB, x, a) }

// RDiv is x / a.
func (s *Scope) RDiv(x float64, a *Tensor) *Tensor { return s.rscalar("rdiv", C.AR_DIV, x, a) }

// Clamp limits a to [lo, hi].
func (s *Scope) Clamp(a *Tensor, lo, hi float64) *Tensor { return s.clamp(a, lo, hi, true, true) }

// ClampMin limits a from below.
func (s *Scope) ClampMin(a *Tensor, lo float64) *Tensor { return s.clamp(a, lo, 0, true, false) }

// ClampMax limits a from above.
func (s *Scope) ClampMax(a *Tensor, hi float64) *Tensor { return s.clamp(a, 0, hi, false, true) }

func (s *Scope) clamp(a *Tensor, lo, hi float64, hasLo, hasHi bool) *Tensor {
	if !s.ready("clamp", a) {
		return nil
	}
	var out C.ar_tensor
	var msg *C.char
	return s.result("clamp", C.ar_clamp(a.h, C.double(lo), C.double(hi), cbool(hasLo), cbool(hasHi), &out, &msg), out, msg)
}

// Where picks a where cond is true and b elsewhere.
func (s *Scope) Where(cond, a, b *Tensor) *Tensor {
	if !s.ready("where", cond, a, b) {
		return nil
	}
	var out C.ar_tensor
	var msg *C.char
	return s.result("where", C.ar_where(cond.h, a.h, b.h, &out, &msg), out, msg)
}

func (s *Scope) reduce(name string, op C.int, a *Tensor, keep bool, dims []int64) *Tensor {
	if !s.ready(name, a) {
		return nil
	}
	var out C.ar_tensor
	var msg *C.char
	dp, nd := cShape(dims)
	return s.result(name, C.ar_reduce(op, a.h, dp, nd, cbool(keep), &out, &msg), out, msg)
}

// Sum adds over dims (all elements when none are given).
func (s *Scope) Sum(a *Tensor, dims ...int64) *Tensor {
	return s.reduce("sum", C.AR_SUM, a, false, dims)
}

// SumKeep adds over dims keeping them as size 1.
func (s *Scope) SumKeep(a *Tensor, dims ...int64) *Tensor {
	return s.reduce("sum", C.AR_SUM, a, true, dims)
}

// Mean averages over dims (all elements when none are given).
func (s *Scope) Mean(a *Tensor, dims ...int64) *Tensor {
	return s.reduce("mean", C.AR_MEAN, a, false, dims)
}

// Max is the largest element (over one dim when given).
func (s *Scope) Max(a *Tensor, dims ...int64) *Tensor {
	return s.reduce("max", C.AR_MAX, a, false, dims)
}

// Min is the smallest element (over one dim when given).
func (s *Scope) Min(a *Tensor, dims ...int64) *Tensor {
	return s.reduce("min", C.AR_MIN, a, false, dims)
}

// MaskedSum is the sum over dims of the elements of a where mask (0/1, any
// dtype) is non-zero. Unselected elements are left out, not multiplied by
// 0: an inf or NaN there (padding, a token no loss counts) cannot turn the
// sum into NaN, and its gradient is 0.
func (s *Scope) MaskedSum(a, mask *Tensor, dims ...int64) *Tensor {
	return s.Sum(s.selected(a, mask), dims...)
}

// MaskedMean is MaskedSum / sum(mask) over dims (the mean of the selected
// elements). A selection with no element gives 0, not NaN.
func (s *Scope) MaskedMean(a, mask *Tensor, dims ...int64) *Tensor {
	if !s.ready("masked_mean", a, mask) {
		return nil
	}
	m := s.To(mask, a.Device(), Float32)
	return s.Div(s.MaskedSum(a, m, dims...), s.ClampMin(s.Sum(m, dims...), 1e-8))
}

// selected is a where mask is non-zero and 0 elsewhere.
func (s *Scope) selected(a, mask *Tensor) *Tensor {
	if !s.ready("masked_select", a, mask) {
		return nil
	}
	zero := s.To(s.Scalar(0), a.Device(), a.DType())
	return s.Where(s.GtScalar(s.To(mask, a.Device(), Float32), 0), a, zero)
}

// LogSoftmax is log(softmax(a)) along dim.
func (s *Scope) LogSoftmax(a *Tensor, dim int64) *Tensor {
	if !s.ready("log_softmax", a) {
		return nil
	}
	var out C.ar_tensor
	var msg *C.char
	return s.result("log_softmax", C.ar_log_softmax(a.h, C.int64_t(dim), &out, &msg), out, msg)
}

// Softmax along dim.
func (s *Scope) Softmax(a *Tensor, dim int64) *Tensor {
	if !s.ready("softmax", a) {
		return nil
	}
	var out C.ar_tensor
	var msg *C.char
	return s.result("softmax", C.ar_softmax(a.h, C.int64_t(dim), &out, &msg), out, msg)
}

// Gather picks a[..., index[...]] along dim (index has a's rank).
func (s *Scope) Gather(a *Tensor, dim int64, index *Tensor) *Tensor {
	if !s.ready("gather", a, index) {
		return nil
	}
	var out C.ar_tensor
	var msg *C.char
	return s.result("gather", C.ar_gather(a.h, C.int64_t(dim), index.h, &out, &msg), out, msg)
}

// Reshape views or copies a into shape (one dim may be -1).
func (s *Scope) Reshape(a *Tensor, shape ...int64) *Tensor {
	if !s.ready("reshape", a) {
		return nil
	}
	var out C.ar_tensor
	var msg *C.char
	sp, nd := cShape(shape)
	return s.result("reshape", C.ar_reshape(a.h, sp, nd, &out, &msg), out, msg)
}

// Slice takes a[start:end] along dim (step 1).
func (s *Scope) Slice(a *Tensor, dim, start, end int64) *Tensor {
	return s.SliceStep(a, dim, start, end, 1)
}

// SliceStep takes a[start:end:step] along dim.
func (s *Scope) SliceStep(a *Tensor, dim, start, end, step int64) *Tensor {
	if !s.ready("slice", a) {
		return nil
	}
	var out C.ar_tensor
	var msg *C.char
	return s.result("slice", C.ar_slice(a.h, C.int64_t(dim), C.int64_t(start), C.int64_t(end), C.int64_t(step), &out, &msg), out, msg)
}

// Transpose swaps two dims.
func (s *Scope) Transpose(a *Tensor, d0, d1 int64) *Tensor {
	if !s.ready("transpose", a) {
		return nil
	}
	var out C.ar_tensor
	var msg *C.char
	return s.result("transpose", C.ar_transpose(a.h, C.int64_t(d0), C.int64_t(d1), &out, &msg), out, msg)
}

func (s *Scope) join(name string, stack bool, dim int64, ts []*Tensor) *Tensor {
	if !s.ready(name, ts...) {
		return nil
	}
	if len(ts) == 0 {
		s.fail(&Error{Op: name, Msg: "no tensors given"})
		return nil
	}
	hs, free, err := tensorHandles(name, ts)
	if err != nil {
		s.fail(err)
		return nil
	}
	defer free()
	var out C.ar_tensor
	var msg *C.char
	var rc C.int
	if stack {
		rc = C.ar_stack(hs, C.int(len(ts)), C.int64_t(dim), &out, &msg)
	} else {
		rc = C.ar_cat(hs, C.int(len(ts)), C.int64_t(dim), &out, &msg)
	}
	return s.result(name, rc, out, msg)
}

// Cat concatenates along an existing dim.
func (s *Scope) Cat(dim int64, ts ...*Tensor) *Tensor { return s.join("cat", false, dim, ts) }

// Stack joins along a new dim.
func (s *Scope) Stack(dim int64, ts ...*Tensor) *Tensor { return s.join("stack", true, dim, ts) }
