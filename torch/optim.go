package torch

// #include <stdlib.h>
// #include "agentrl.h"
import "C"

import (
	"fmt"
	"math"
	"unsafe"
)

// AdamWGroup holds the hyper-parameters of one parameter group.
type AdamWGroup struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
}

// DefaultAdamW is torch.optim.AdamW's default group (lr 1e-3, betas
// (0.9, 0.999), eps 1e-8, weight decay 0.01).
var DefaultAdamW = AdamWGroup{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}

// AdamW is the decoupled-weight-decay Adam optimizer over a fixed list of
// parameters, stepped in one C call.
//
// A bf16 or f16 parameter is trained through f32 master weights: its
// gradients are summed in an f32 accumulator (Accumulate after each
// backward pass), the update and the moments are f32, and the parameter
// receives the master rounded to its dtype after each step. Without them a
// small step (lr 1e-6 on a weight near 0.02) would round to nothing.
//
// With a process group attached (Shard), ReduceGrads sums the gradients
// over its ranks, and ZeRO stages 1 and 2 keep on each rank only its 1/N
// of the master weights and moments (see ar_adamw_shard in agentrl.h).
type AdamW struct {
	h      C.ar_adamw
	params []*Tensor
	group  *Group // attached by Shard; kept alive while the optimizer uses it
	stage  int    // Shard's ZeRO stage
}

// NewAdamW makes an optimizer: params[i] belongs to groups[group[i]]. With
// group nil every parameter is in groups[0].
func NewAdamW(params []*Tensor, group []int, groups []AdamWGroup) (*AdamW, error) {
	if err := Check(); err != nil {
		return nil, err
	}
	if len(params) == 0 || len(groups) == 0 {
		return nil, fmt.Errorf("adamw: need at least one parameter and one group")
	}
	if group == nil {
		group = make([]int, len(params))
	}
	if len(group) != len(params) {
		return nil, fmt.Errorf("adamw: %d group indices for %d params", len(group), len(params))
	}
	n := len(params)
	hs, free, err := tensorHandles("adamw", params)
	if err != nil {
		return nil, err
	}
	defer free()
	gi := (*C.int)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(gi))
	ga := unsafe.Slice(gi, n)
	for i := range params {
		ga[i] = C.int(group[i])
	}
	g := len(groups)
	vals := make([][]C.double, 5)
	for k := range vals {
		vals[k] = make([]C.double, g)
	}
	for i, gr := range groups {
		vals[0][i], vals[1][i], vals[2][i], vals[3][i], vals[4][i] = C.double(gr.LR), C.double(gr.Beta1), C.double(gr.Beta2), C.double(gr.Eps), C.double(gr.WeightDecay)
	}
	// The hyper-parameter arrays are Go memory without Go pointers: passing
	// them to C for the duration of the call is allowed.
	var out C.ar_adamw
	var msg *C.char
	if err := check("adamw_new", C.ar_adamw_new(hs, gi, C.int(n), &vals[0][0], &vals[1][0], &vals[2][0], &vals[3][0], &vals[4][0], C.int(g), &out, &msg), msg); err != nil {
		return nil, err
	}
	return &AdamW{h: out, params: params}, nil
}

// Free releases the optimizer and its state.
func (o *AdamW) Free() {
	if o != nil && o.h != nil {
		C.ar_adamw_free(o.h)
		o.h = nil
	}
}

// Accumulate moves the gradients of bf16/f16 parameters into their f32
// accumulators. Call it after each backward pass, so that micro-batches
// sum in f32; the other methods do it first as well.
func (o *AdamW) Accumulate() error {
	var msg *C.char
	return check("adamw_accumulate", C.ar_adamw_accumulate(o.h, &msg), msg)
}

// Shard attaches the process group g: ReduceGrads then sums the gradients
// over its ranks. With stage 0 every rank keeps the whole state; with 1
// and 2 (ZeRO) each keeps its 1/N of the f32 master weights and moments,
// stage 1 all-reducing the gradients and stage 2 reduce-scattering them;
// Step then all-gathers the updated weights. Collectives move about
// bucketBytes at a time. Call it before the first step or SetState.
func (o *AdamW) Shard(g *Group, stage int, bucketBytes int64) error {
	if g == nil || g.h == nil {
		return fmt.Errorf("adamw: shard over a closed process group")
	}
	var msg *C.char
	if err := check("adamw_shard", C.ar_adamw_shard(o.h, g.h, C.int(stage), C.int64_t(bucketBytes), &msg), msg); err != nil {
		return err
	}
	o.group, o.stage = g, stage
	return nil
}

// Sharded reports whether each rank holds a range of the state (ZeRO
// stage 1 or 2): State is then a collective every rank must call.
func (o *AdamW) Sharded() bool { return o.group != nil && o.stage >= 1 }

// ReduceGrads sums the gradients over the attached group's ranks (every
// rank calls it): whole, or with ZeRO stage 2 only this rank's range. A
// parameter no rank has a gradient for keeps none and is not stepped. It
// must come before ClipGradNorm and Step when a group is attached; it only
// accumulates without one.
func (o *AdamW) ReduceGrads() error {
	var msg *C.char
	return check("adamw_reduce_grads", C.ar_adamw_reduce_grads(o.h, &msg), msg)
}

// SetLR changes the learning rate of one group (schedules call it per step).
func (o *AdamW) SetLR(group int, lr float64) error {
	var msg *C.char
	return check("adamw_set_lr", C.ar_adamw_set_lr(o.h, C.int(group), C.double(lr), &msg), msg)
}

// Step updates every parameter that has a gradient.
func (o *AdamW) Step() error {
	var msg *C.char
	return check("adamw_step", C.ar_adamw_step(o.h, &msg), msg)
}

// Fused reports whether Step runs libtorch's fused multi-tensor AdamW
// (at::_fused_adamw_, torch.optim.AdamW(fused=True)'s kernel) rather than
// a loop of elementwise ops per parameter. A new optimizer is fused where
// the linked libtorch has the kernel for every parameter's device: CUDA
// from libtorch 2.0, the CPU from 2.4.
func (o *AdamW) Fused() (bool, error) {
	var f C.int
	var msg *C.char
	if err := check("adamw_fused", C.ar_adamw_fused(o.h, &f, &msg), msg); err != nil {
		return false, err
	}
	return f != 0, nil
}

// SetFused chooses the fused step (on) or the loop. Both take the same
// state and give the same update to the last bits, so they may alternate.
// Choosing the fused step where some parameter's device lacks it is an
// error that says why.
func (o *AdamW) SetFused(on bool) error {
	f := C.int(0)
	if on {
		f = 1
	}
	var msg *C.char
	return check("adamw_set_fused", C.ar_adamw_set_fused(o.h, f, &msg), msg)
}

// ZeroGrad drops all parameter gradients.
func (o *AdamW) ZeroGrad() error {
	var msg *C.char
	return check("adamw_zero_grad", C.ar_adamw_zero_grad(o.h, &msg), msg)
}

// ClipGradNorm scales the gradients so their global L2 norm is at most
// maxNorm (maxNorm <= 0 only measures) and returns the norm before
// clipping. With a group attached the norm is the same on every rank: the
// largest of the ranks' (stage 0: their thread counts may order the sums
// differently), or the root of the sum of the ranks' squared sums over
// their ranges (ZeRO).
func (o *AdamW) ClipGradNorm(maxNorm float64) (float64, error) {
	var n C.double
	var msg *C.char
	if err := check("grad_norm", C.ar_adamw_grad_norm(o.h, &n, &msg), msg); err != nil {
		return 0, err
	}
	total := float64(n)
	// Like torch.nn.utils.clip_grad_norm_: scale by maxNorm/(total+1e-6)
	// when that is below 1; a non-finite norm is left for the caller to see.
	if maxNorm > 0 && !math.IsNaN(total) && !math.IsInf(total, 0) {
		if coef := maxNorm / (total + 1e-6); coef < 1 {
			if err := check("scale_grads", C.ar_adamw_scale_grads(o.h, C.double(coef), &msg), msg); err != nil {
				return 0, err
			}
		}
	}
	return total, nil
}

// StateBytes is the size of the state this rank holds: the moments and
// the f32 master weights (with ZeRO, this rank's range of them).
func (o *AdamW) StateBytes() (int64, error) {
	var n C.int64_t
	var msg *C.char
	if err := check("adamw_state_bytes", C.ar_adamw_state_bytes(o.h, &n, &msg), msg); err != nil {
		return 0, err
	}
	return int64(n), nil
}

// ParamState is the optimizer state of one parameter, for checkpoints.
type ParamState struct {
	Step int64
	M, V *Tensor // nil before the first step
	// Master is a bf16/f16 parameter's f32 master copy (nil for an f32
	// parameter, and before the first gradient).
	Master *Tensor
}

// Free releases the state's tensors.
func (st ParamState) Free() {
	st.M.Free()
	st.V.Free()
	st.Master.Free()
}

// State returns the whole state of parameter i (the caller frees it). With
// a sharded state it gathers the ranks' ranges: every rank must call it
// for the same i.
func (o *AdamW) State(i int) (ParamState, error) {
	var step C.int64_t
	var m, v, master C.ar_tensor
	var msg *C.char
	if err := check("adamw_get_state", C.ar_adamw_get_state(o.h, C.int(i), &step, &m, &v, &master, &msg), msg); err != nil {
		return ParamState{}, err
	}
	ps := ParamState{Step: int64(step)}
	for _, x := range []struct {
		h   C.ar_tensor
		dst **Tensor
	}{{m, &ps.M}, {v, &ps.V}, {master, &ps.Master}} {
		if x.h != nil {
			*x.dst = wrap(x.h)
		}
	}
	return ps, nil
}

// SetState restores the state of parameter i from its whole state (copied;
// the caller keeps ownership of the tensors); a sharded optimizer keeps its
// range. A bf16/f16 parameter without a Master takes
// its master weights from its own values; with one, it is set to the
// master rounded to its dtype.
func (o *AdamW) SetState(i int, st ParamState) error {
	mh, err := st.M.handle("adamw_set_state")
	if err != nil {
		return err
	}
	vh, err := st.V.handle("adamw_set_state")
	if err != nil {
		return err
	}
	var master C.ar_tensor
	if st.Master != nil {
		if master, err = st.Master.handle("adamw_set_state"); err != nil {
			return err
		}
	}
	var msg *C.char
	return check("adamw_set_state", C.ar_adamw_set_state(o.h, C.int(i), C.int64_t(st.Step), mh, vh, master, &msg), msg)
}

// NumParams is the number of parameters the optimizer updates.
func (o *AdamW) NumParams() int { return len(o.params) }
