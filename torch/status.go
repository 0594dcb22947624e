// Package torch is the Go face of libtorch: tensors with explicit
// ownership, the differentiable ops the RL losses are composed from, AdamW,
// the Qwen2/Qwen3/Llama policy model and its KV-cache decode engine. Everything
// goes through the plain C ABI in cgo/agentrl.h.
//
// libtorch keeps per-thread state, so all libtorch work of a process should
// run on one goroutine locked to its OS thread (see Worker).
package torch

// #include <stdlib.h>
// #include "agentrl.h"
import "C"

import (
	"errors"
	"unsafe"
)

// ErrOutOfMemory is wrapped by errors from calls that ran out of device or
// host memory, so callers can shrink the batch and retry.
var ErrOutOfMemory = errors.New("out of memory")

// Error is a failure reported by libtorch, with its message.
type Error struct {
	Op  string // the Go-side operation
	Msg string // libtorch's message
	OOM bool
}

func (e *Error) Error() string { return "torch " + e.Op + ": " + e.Msg }

// Unwrap makes errors.Is(err, ErrOutOfMemory) work.
func (e *Error) Unwrap() error {
	if e.OOM {
		return ErrOutOfMemory
	}
	return nil
}

// check converts a C status and message into a Go error, freeing the message.
func check(op string, rc C.int, msg *C.char) error {
	if rc == C.AR_OK {
		return nil
	}
	s := "unknown error"
	if msg != nil {
		s = C.GoString(msg)
		C.free(unsafe.Pointer(msg))
	}
	return &Error{Op: op, Msg: s, OOM: rc == C.AR_OOM}
}
