package torch

// #include "agentrl.h"
import "C"

import (
	"encoding/binary"
	"fmt"
	"unsafe"
)

// Routing is the experts the tokens of a batch took at the sparse
// (mixture-of-experts) layers of a model: for row b, position t, the j-th
// sparse layer (in layer order) and choice i, Experts[((b*T+t)*Layers+j)*K+i],
// K the model's num_experts_per_tok.
//
// Recorded where the behaviour policy ran and replayed in the training
// forward (ForwardOptions.ReplayRouting), it makes the training forward
// route each token as the rollout did: a router on a near tie can
// otherwise pick other experts in the two (other kernels, batch shapes or
// precision), and the training logprobs of such a token are then those of
// another computation than the one that sampled it.
type Routing struct {
	Layers, K int
	Experts   []int16
}

// SparseLayers is the number of mixture-of-experts layers.
func (c Config) SparseLayers() int {
	n := 0
	for i := range c.Layers {
		if c.SparseLayer(i) {
			n++
		}
	}
	return n
}

// routingShape checks r against the model's sparse layers for n tokens.
func (m *Model) routingShape(r *Routing, tokens int) error {
	L, k := m.Config.SparseLayers(), m.Config.MoE.ExpertsPerToken
	if L == 0 {
		return fmt.Errorf("routing: the model has no mixture-of-experts layer")
	}
	if r == nil {
		return nil
	}
	if r.Layers != L || r.K != k || len(r.Experts) != tokens*L*k {
		return fmt.Errorf("routing: %d experts for %d sparse layers and %d per token, want %d tokens x %d layers x %d",
			len(r.Experts), r.Layers, r.K, tokens, L, k)
	}
	return nil
}

// SetRecordRouting turns the routing record on or off (the model must
// have sparse layers): while on, the engine keeps, for each slot, the
// experts each token it caches took at each sparse layer (prefill and
// decode steps alike), which Routing returns. Turning it on refuses while
// a slot holds tokens; off forgets every record.
func (e *Engine) SetRecordRouting(on bool) error {
	var msg *C.char
	v := C.int(0)
	if on {
		v = 1
	}
	return check("engine_set_record_routing", C.ar_engine_set_record_routing(e.h, v, &msg), msg)
}

// Routing is the record of slot: the experts each of its cached tokens
// took at each sparse layer, [Len(slot)] tokens, as a training forward
// over the same tokens replays it (ForwardOptions.ReplayRouting, the
// slot's tokens as one row).
func (e *Engine) Routing(slot int) (*Routing, error) {
	n, err := e.Len(slot)
	if err != nil {
		return nil, err
	}
	c := e.model.Config
	r := &Routing{Layers: c.SparseLayers(), K: c.MoE.ExpertsPerToken}
	r.Experts = make([]int16, n*r.Layers*r.K)
	var out *C.int16_t
	if len(r.Experts) > 0 {
		out = (*C.int16_t)(unsafe.Pointer(&r.Experts[0]))
	}
	var msg *C.char
	if err := check("engine_routing", C.ar_engine_routing(e.h, C.int(slot), out, C.int64_t(len(r.Experts)), &msg), msg); err != nil {
		return nil, err
	}
	return r, nil
}

// RoutingBytes is the record of slot (Routing) packed for storage
// (Routing.Bytes, for the model's experts).
func (e *Engine) RoutingBytes(slot int) ([]byte, error) {
	r, err := e.Routing(slot)
	if err != nil {
		return nil, err
	}
	return r.Bytes(e.model.Config.MoE.Experts), nil
}

// forwardRouted is Forward with routing replay or record (ar_model_forward_routed).
func (m *Model) forwardRouted(b Batch, opt ForwardOptions, o *forwardOuts, rows *C.int64_t, nRows C.int64_t) (Output, error) {
	n := b.B * b.T
	if err := m.routingShape(opt.ReplayRouting, n); err != nil {
		return Output{}, fmt.Errorf("model forward: %w", err)
	}
	var replay, record *C.int16_t
	if opt.ReplayRouting != nil && n > 0 {
		replay = (*C.int16_t)(unsafe.Pointer(&opt.ReplayRouting.Experts[0]))
	}
	var rec *Routing
	if opt.RecordRouting {
		L, k := m.Config.SparseLayers(), m.Config.MoE.ExpertsPerToken
		rec = &Routing{Layers: L, K: k, Experts: make([]int16, n*L*k)}
		record = (*C.int16_t)(unsafe.Pointer(&rec.Experts[0]))
	}
	var msg *C.char
	rc := C.ar_model_forward_routed(m.h, (*C.int64_t)(unsafe.Pointer(&b.IDs[0])), (*C.int64_t)(unsafe.Pointer(&b.Attn[0])),
		(*C.int64_t)(unsafe.Pointer(&b.Positions[0])), C.int64_t(b.B), C.int64_t(b.T), o.temp, forwardFlags(opt),
		rows, nRows, replay, record, o.pLp, o.pEnt, o.pVal, o.pAux, &msg)
	if err := check("model_forward", rc, msg); err != nil {
		return Output{}, err
	}
	out := o.output()
	out.Routing = rec
	return out, nil
}

// Bytes packs r for storage: one byte per choice when the model has at
// most 256 experts, else two (little-endian).
func (r Routing) Bytes(experts int) []byte {
	if experts <= 256 {
		out := make([]byte, len(r.Experts))
		for i, e := range r.Experts {
			out[i] = byte(e)
		}
		return out
	}
	out := make([]byte, 2*len(r.Experts))
	for i, e := range r.Experts {
		binary.LittleEndian.PutUint16(out[2*i:], uint16(e))
	}
	return out
}

// ParseRouting reads what Routing.Bytes wrote for a model with experts
// experts, layers sparse layers and k experts per token, refusing a
// length that is not a whole number of tokens and an expert out of range.
func ParseRouting(b []byte, experts, layers, k int) (Routing, error) {
	if experts <= 0 || experts > 32767 || layers <= 0 || k <= 0 {
		return Routing{}, fmt.Errorf("routing: %d experts, %d sparse layers, %d per token", experts, layers, k)
	}
	width := 1
	if experts > 256 {
		width = 2
	}
	if len(b)%(width*layers*k) != 0 {
		return Routing{}, fmt.Errorf("routing: %d bytes are not a whole number of tokens of %d layers x %d experts (%d bytes each)",
			len(b), layers, k, width)
	}
	r := Routing{Layers: layers, K: k, Experts: make([]int16, len(b)/width)}
	for i := range r.Experts {
		e := int(b[i])
		if width == 2 {
			e = int(binary.LittleEndian.Uint16(b[2*i:]))
		}
		if e >= experts {
			return Routing{}, fmt.Errorf("routing: choice %d is expert %d, the model has %d", i, e, experts)
		}
		r.Experts[i] = int16(e)
	}
	return r, nil
}
