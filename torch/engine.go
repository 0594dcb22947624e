package torch

// #include <stdlib.h>
// #include "agentrl.h"
// #include "internal.h"
import "C"

import (
	"fmt"
	"unsafe"
)

// Sampling configures how a decode step picks tokens. Temperature <= 0 is
// greedy; TopK <= 0 and TopP >= 1 turn those filters off. The recorded
// log-probability is always log softmax(logits/Temperature) of the chosen
// token, untruncated (Temperature 1 when greedy): the same quantity the
// training forward computes at that temperature.
type Sampling struct {
	Temperature float64
	TopK        int
	TopP        float64
}

// Engine is a KV-cache decode engine with a fixed number of slots, each a
// sequence with its own length. It runs in inference mode.
type Engine struct {
	h      C.ar_engine
	model  *Model
	slots  int
	maxLen int
}

// NewEngine allocates caches for slots sequences of up to maxLen tokens.
func NewEngine(m *Model, slots, maxLen int) (*Engine, error) {
	var h C.ar_engine
	var msg *C.char
	if err := check("engine_new", C.ar_engine_new(m.h, C.int(slots), C.int64_t(maxLen), &h, &msg), msg); err != nil {
		return nil, err
	}
	return &Engine{h: h, model: m, slots: slots, maxLen: maxLen}, nil
}

// Free releases the caches.
func (e *Engine) Free() {
	if e != nil && e.h != nil {
		C.ar_engine_free(e.h)
		e.h = nil
	}
}

// Slots is the number of slots.
func (e *Engine) Slots() int { return e.slots }

// Device is the device of the engine's model and caches.
func (e *Engine) Device() Device { return e.model.Device }

// MaxLen is the cache length of each slot.
func (e *Engine) MaxLen() int { return e.maxLen }

// Prefill appends tokens to a slot (a prompt, or an observation in the
// middle of a trajectory); the slot's next step continues after them.
func (e *Engine) Prefill(slot int, ids []int64) error {
	if len(ids) == 0 {
		return fmt.Errorf("engine prefill of slot %d: no tokens", slot)
	}
	var msg *C.char
	return check("engine_prefill", C.ar_engine_prefill(e.h, C.int(slot), (*C.int64_t)(unsafe.Pointer(&ids[0])), C.int64_t(len(ids)), &msg), msg)
}

// PrefillBatch appends ids[i] to slots[i] for every i, in one call: the
// slots (distinct, each given at least one token) may hold different
// numbers of tokens already and take different numbers of new ones. Each
// slot's next step continues after its own last token, as after Prefill of
// that slot alone. A bad input (a slot out of range or given twice, no
// tokens, a slot's cache overflowing, a token outside the vocabulary) is
// an error naming the slot, and the engine is left unchanged.
func (e *Engine) PrefillBatch(slots []int, ids [][]int64) error {
	if len(slots) == 0 || len(slots) != len(ids) {
		return fmt.Errorf("engine batched prefill: %d slots and %d token lists", len(slots), len(ids))
	}
	cs := make([]C.int, len(slots))
	lens := make([]int64, len(slots))
	var flat []int64
	for i, sl := range slots {
		if len(ids[i]) == 0 {
			return fmt.Errorf("engine batched prefill of slot %d: no tokens", sl)
		}
		cs[i], lens[i] = C.int(sl), int64(len(ids[i]))
		flat = append(flat, ids[i]...)
	}
	var msg *C.char
	return check("engine_prefill_batch", C.ar_engine_prefill_batch(e.h, &cs[0], C.int(len(cs)),
		(*C.int64_t)(unsafe.Pointer(&flat[0])), (*C.int64_t)(unsafe.Pointer(&lens[0])), &msg), msg)
}

// CopySlot makes dst a copy of src: a group of samples shares one prefill.
func (e *Engine) CopySlot(src, dst int) error {
	var msg *C.char
	return check("engine_copy_slot", C.ar_engine_copy_slot(e.h, C.int(src), C.int(dst), &msg), msg)
}

// Release empties a slot for reuse.
func (e *Engine) Release(slot int) error {
	var msg *C.char
	return check("engine_release", C.ar_engine_release(e.h, C.int(slot), &msg), msg)
}

// Len is the number of tokens cached in a slot.
func (e *Engine) Len(slot int) (int, error) {
	var n C.int64_t
	var msg *C.char
	err := check("engine_slot_len", C.ar_engine_slot_len(e.h, C.int(slot), &n, &msg), msg)
	return int(n), err
}

// CachePositions is, for each layer of the model, the positions one slot
// of its own key and value caches holds: the engine's MaxLen for a full
// attention layer, min(sliding window, MaxLen) for a sliding-window layer
// (a ring: position p at entry p mod that), 0 for a layer with no cache
// of its own (a Gemma 4 kv-shared layer, which reads another's; a Gated
// DeltaNet, Mamba-2 or MLP layer).
func (e *Engine) CachePositions() ([]int, error) {
	n := e.model.Config.Layers
	out := make([]C.int64_t, n)
	var msg *C.char
	if err := check("engine_cache_positions", C.ar_engine_cache_positions(e.h, &out[0], C.int64_t(n), &msg), msg); err != nil {
		return nil, err
	}
	positions := make([]int, n)
	for i, p := range out {
		positions[i] = int(p)
	}
	return positions, nil
}

// Seed restarts the random stream of a slot. Each slot samples from its own
// stream, so a trajectory's tokens do not depend on which other slots
// decode beside it.
func (e *Engine) Seed(slot int, seed uint64) error {
	var msg *C.char
	return check("engine_seed", C.ar_engine_seed(e.h, C.int(slot), C.uint64_t(seed), &msg), msg)
}

// Step samples one token for each given slot and advances them together,
// in one call. tokens and logprobs receive len(slots) entries.
func (e *Engine) Step(slots []int, s Sampling, tokens []int64, logprobs []float32) error {
	n := len(slots)
	if n == 0 || len(tokens) < n || len(logprobs) < n {
		return fmt.Errorf("engine step: %d slots, %d token and %d logprob buffers", n, len(tokens), len(logprobs))
	}
	cs := make([]C.int, n)
	for i, sl := range slots {
		cs[i] = C.int(sl)
	}
	topP := s.TopP
	if topP == 0 {
		topP = 1
	}
	cfg := C.ar_sampling{temperature: C.double(s.Temperature), top_k: C.int64_t(s.TopK), top_p: C.double(topP)}
	var msg *C.char
	return check("engine_step", C.ar_engine_step(e.h, &cs[0], C.int(n), &cfg,
		(*C.int64_t)(unsafe.Pointer(&tokens[0])), (*C.float)(unsafe.Pointer(&logprobs[0])), &msg), msg)
}

// PendingLogits returns the logits a slot's next step will sample from.
func (e *Engine) PendingLogits(slot int) ([]float32, error) {
	out := make([]float32, e.model.Config.Vocab)
	var msg *C.char
	err := check("engine_logits", C.ar_engine_logits(e.h, C.int(slot), (*C.float)(unsafe.Pointer(&out[0])), C.int64_t(len(out)), &msg), msg)
	return out, err
}

// DecodePath is an implementation of the engine's decode step.
type DecodePath int

// The decode paths. DecodeAuto picks DecodeKernels where they are supported
// (a CPU model in f32 or bf16 without autocast, on a CPU with AVX-512 or
// AVX2 with FMA, as the environment variable AGENTRL_CPU_KERNELS allows:
// auto, avx512, avx2 or off) and DecodeFused elsewhere.
const (
	// DecodeAuto is the default choice.
	DecodeAuto DecodePath = C.AR_DECODE_AUTO
	// DecodeKernels is the hand-written CPU step (cgo/decode.cpp), reading
	// the model's own weight tensors.
	DecodeKernels DecodePath = C.AR_DECODE_KERNELS
	// DecodeFused runs libtorch ops with q/k/v and gate/up each fused into
	// one weight (copies refreshed whenever the model's weights change;
	// CUDA graphs on CUDA).
	DecodeFused DecodePath = C.AR_DECODE_FUSED
	// DecodeUnfused runs libtorch ops on the model's tensors, as the
	// training forward does: the reference the others are tested against.
	DecodeUnfused DecodePath = C.AR_DECODE_UNFUSED
)

// String names the path: auto, kernels, fused or unfused.
func (p DecodePath) String() string {
	switch p {
	case DecodeAuto:
		return "auto"
	case DecodeKernels:
		return "kernels"
	case DecodeFused:
		return "fused"
	case DecodeUnfused:
		return "unfused"
	}
	return fmt.Sprintf("DecodePath(%d)", int(p))
}

// SetDecodePath chooses how decode steps run; DecodeKernels is an error
// where the kernels cannot run.
func (e *Engine) SetDecodePath(p DecodePath) error {
	var msg *C.char
	return check("engine_set_decode", C.ar_engine_set_decode(e.h, C.int(p), &msg), msg)
}

// DecodePath is the path decode steps take now (never DecodeAuto) and, when
// the hand-written kernels cannot run here, why not ("" when they can).
func (e *Engine) DecodePath() (DecodePath, string, error) {
	d, err := e.Decode()
	return d.Path, d.Why, err
}

// DecodeInfo is how an engine decodes: the path its steps take now (never
// DecodeAuto), the instruction set of its hand-written CPU kernels where
// it has them ("avx512" or "avx2"; "" otherwise), and where it cannot run
// them, why not ("" when it can).
type DecodeInfo struct {
	Path     DecodePath
	ISA, Why string
}

// String names the path with the kernels' instruction set: "kernels
// (avx2)", "fused", "unfused".
func (d DecodeInfo) String() string {
	if d.Path == DecodeKernels && d.ISA != "" {
		return fmt.Sprintf("%v (%s)", d.Path, d.ISA)
	}
	return d.Path.String()
}

// Decode says how the engine decodes now.
func (e *Engine) Decode() (DecodeInfo, error) {
	var p C.int
	var why, isa, msg *C.char
	if err := check("engine_decode_path", C.ar_engine_decode_path(e.h, &p, &why, &isa, &msg), msg); err != nil {
		return DecodeInfo{}, err
	}
	return DecodeInfo{Path: DecodePath(p), ISA: takeString(isa), Why: takeString(why)}, nil
}

// CPUDecode says which decode step a CPU engine would run for a model of
// cfg with weights of dtype dt (under bf16 autocast when autocast) on this
// machine, without making one (no weights are allocated): the hand-written
// kernels' instruction set ("avx512" or "avx2") and "", or "" and why the
// kernels would not run (the engine then takes libtorch's step). An
// AGENTRL_CPU_KERNELS the shim does not know is an error.
func CPUDecode(cfg Config, dt DType, autocast bool) (isa, why string, err error) {
	m, err := NewModel(cfg, dt, Meta, false)
	if err != nil {
		return "", "", err
	}
	defer m.Free()
	if err := m.SetAutocast(autocast, BFloat16); err != nil {
		return "", "", err
	}
	var cisa, cwhy, msg *C.char
	if err := check("model_cpu_decode", C.ar_model_cpu_decode(m.h, &cisa, &cwhy, &msg), msg); err != nil {
		return "", "", err
	}
	return takeString(cisa), takeString(cwhy), nil
}

// takeString is a malloc'd C string as Go's, freed ("" for NULL).
func takeString(s *C.char) string {
	if s == nil {
		return ""
	}
	defer C.free(unsafe.Pointer(s))
	return C.GoString(s)
}

// CUDAGraphs reports the engine's CUDA graphs: how many decode steps are
// captured now (one per row count) and, once a capture has failed and
// decode steps run eagerly, why ("" while graphs are in use). 0 and ""
// without CUDA.
func (e *Engine) CUDAGraphs() (captured int, off string, err error) {
	var n C.int64_t
	var why, msg *C.char
	if err := check("engine_cuda_graphs", C.ar_engine_cuda_graphs(e.h, &n, &why, &msg), msg); err != nil {
		return 0, "", err
	}
	if why != nil {
		off = C.GoString(why)
		C.free(unsafe.Pointer(why))
	}
	return int(n), off, nil
}

// EngineCounters is what an engine did since it was made: Refreshes
// counts the rewrites of its fused weights from the model's (once per
// change of the weights, on the fused path), Captures the CUDA graph
// captures tried, Replays the decode steps replayed from a CUDA graph and
// EagerSteps the other decode steps (libtorch ops or the CPU kernels).
type EngineCounters struct {
	Refreshes, Captures, Replays, EagerSteps int64
}

// Counters reads the engine's counters.
func (e *Engine) Counters() (EngineCounters, error) {
	var r, c, p, s C.int64_t
	var msg *C.char
	if err := check("engine_counters", C.ar_engine_counters(e.h, &r, &c, &p, &s, &msg), msg); err != nil {
		return EngineCounters{}, err
	}
	return EngineCounters{Refreshes: int64(r), Captures: int64(c), Replays: int64(p), EagerSteps: int64(s)}, nil
}

// StepProfile is the wall time of an engine's decode steps by phase, in
// seconds: weight matrix products (lm_head included), attention (RoPE, the
// cache write, scores, softmax, values), sampling, and everything else.
type StepProfile struct {
	Products, Attention, Sampling, Other float64
	Steps                                int
}

// Total is the time of all phases.
func (p StepProfile) Total() float64 { return p.Products + p.Attention + p.Sampling + p.Other }

// Profile returns the time decode steps took since the engine was made or
// the last reset, and with reset starts again from zero.
func (e *Engine) Profile(reset bool) (StepProfile, error) {
	var ph [4]C.double
	var steps C.int64_t
	var msg *C.char
	if err := check("engine_profile", C.ar_engine_profile(e.h, &ph[0], &steps, cbool(reset), &msg), msg); err != nil {
		return StepProfile{}, err
	}
	return StepProfile{Products: float64(ph[0]), Attention: float64(ph[1]), Sampling: float64(ph[2]),
		Other: float64(ph[3]), Steps: int(steps)}, nil
}

// checkGraphReplay is the check a CUDA graph capture ends with (the seam
// that tests it without a GPU): replayed [S,V] was poisoned with NaN before
// the graph's first replay and must hold the eager step's logits.
func checkGraphReplay(eager, replayed *Tensor, slots int) error {
	e, err := eager.handle("check_graph_replay")
	if err != nil {
		return err
	}
	r, err := replayed.handle("check_graph_replay")
	if err != nil {
		return err
	}
	var msg *C.char
	return check("check_graph_replay", C.ar_check_graph_replay(e, r, C.int64_t(slots), &msg), msg)
}

// setPrefillTokens bounds the padded tokens (slots x longest) of one
// forward of PrefillBatch (0: the default, 16384), the seam that tests
// splitting a batch into several forwards on small inputs.
func (e *Engine) setPrefillTokens(n int) error {
	var msg *C.char
	return check("engine_set_prefill_tokens", C.ar_engine_set_prefill_tokens(e.h, C.int64_t(n), &msg), msg)
}
