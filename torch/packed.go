package torch

// #include "agentrl.h"
import "C"

import (
	"fmt"
	"unsafe"
)

// PackedBatch is sequences packed into rows that share prefixes, row-major:
// IDs and Positions [B*T] (the RoPE position each token had in its own
// sequence), Allowed [B*T*T] (1 where query t of a row may attend key s;
// every query allows itself), and the targets: target j asks for the
// log-probability of token Tgt[j] predicted at position Src[j] of row
// Row[j]. Lens [B], when set, is the number of real tokens at the start of
// each row (the rest padding): the routers' load-balancing loss counts
// only those (nil: every token).
type PackedBatch struct {
	B, T          int
	IDs           []int64
	Positions     []int64
	Allowed       []uint8
	Row, Src, Tgt []int64
	Lens          []int64
}

func (b PackedBatch) check() error {
	n := b.B * b.T
	if b.B <= 0 || b.T <= 0 || len(b.IDs) != n || len(b.Positions) != n || len(b.Allowed) != n*b.T {
		return fmt.Errorf("packed batch: want %d ids and positions and %d mask bits for [%d,%d], have %d, %d, %d",
			n, n*b.T, b.B, b.T, len(b.IDs), len(b.Positions), len(b.Allowed))
	}
	if len(b.Row) == 0 || len(b.Src) != len(b.Row) || len(b.Tgt) != len(b.Row) {
		return fmt.Errorf("packed batch: %d rows, %d positions and %d tokens of targets, want as many, at least 1", len(b.Row), len(b.Src), len(b.Tgt))
	}
	if b.Lens != nil && len(b.Lens) != b.B {
		return fmt.Errorf("packed batch: %d row lengths for %d rows", len(b.Lens), b.B)
	}
	return nil
}

// ForwardPacked is Forward over a packed batch: the outputs are [n], one
// per target (values and entropies at the target's position). EntropyGrad,
// Values and ValuesOnly behave as in Forward.
func (m *Model) ForwardPacked(b PackedBatch, opt ForwardOptions) (Output, error) {
	if err := b.check(); err != nil {
		return Output{}, err
	}
	if opt.ReplayRouting != nil || opt.RecordRouting {
		return Output{}, fmt.Errorf("packed forward: routing replay and record (ForwardOptions.ReplayRouting, RecordRouting) are not implemented for packed batches; use Forward")
	}
	o, err := newForwardOuts(opt)
	if err != nil {
		return Output{}, err
	}
	i64 := func(s []int64) *C.int64_t {
		if s == nil {
			return nil
		}
		return (*C.int64_t)(unsafe.Pointer(&s[0]))
	}
	var msg *C.char
	rc := C.ar_model_forward_packed(m.h, i64(b.IDs), (*C.uint8_t)(unsafe.Pointer(&b.Allowed[0])), i64(b.Positions),
		C.int64_t(b.B), C.int64_t(b.T), C.int64_t(len(b.Row)), i64(b.Row), i64(b.Src), i64(b.Tgt), i64(b.Lens),
		o.temp, forwardFlags(opt), o.pLp, o.pEnt, o.pVal, o.pAux, &msg)
	if err := check("model_forward_packed", rc, msg); err != nil {
		return Output{}, err
	}
	return o.output(), nil
}
