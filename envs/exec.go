package envs

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// callStatus classifies how a tool call went, for observations and
// process rewards.
type callStatus int

const (
	callDone      callStatus = iota // the tool returned a Result
	callRejected                    // the call itself was wrong: unknown tool, bad arguments, tool error
	callFailed                      // the tool broke: panic, timeout or a Failure error (not the model's fault)
	callCancelled                   // the step's context was cancelled
)

// callOutcome is what running one call produced.
type callOutcome struct {
	status  callStatus
	result  Result
	err     error
	latency time.Duration
	// foreign: the tool reads another world's corpus than the task's
	// (WorldTool), so its passages are not the task's evidence.
	foreign bool
}

// runTool calls t with a per-call timeout. It returns when the tool does or
// when the timeout or ctx expires, whichever comes first, even if the tool
// ignores its context (the tool's goroutine is then left to finish on its
// own). A panic in the tool is recovered and reported as a failure.
func runTool(ctx context.Context, t Tool, args json.RawMessage, timeout time.Duration) callOutcome {
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan callOutcome, 1) // buffered: a late tool must not block forever
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- callOutcome{status: callFailed, err: fmt.Errorf("tool %s failed unexpectedly (panic: %v)", t.Name(), p)}
			}
		}()
		res, err := t.Call(cctx, args)
		switch {
		case IsFailure(err):
			done <- callOutcome{status: callFailed, err: err}
			return
		case err != nil:
			done <- callOutcome{status: callRejected, err: err}
			return
		}
		done <- callOutcome{status: callDone, result: res}
	}()
	var out callOutcome
	select {
	case out = <-done:
		// A tool that gave up because its context expired reports the
		// context's error: a timeout or a cancellation, not a rejected call.
		if out.status != callDone && cctx.Err() != nil {
			out = expired(ctx, t.Name(), timeout)
		}
	case <-cctx.Done():
		out = expired(ctx, t.Name(), timeout)
	}
	out.latency = time.Since(start)
	return out
}

// expired describes a call whose context ran out.
func expired(ctx context.Context, name string, timeout time.Duration) callOutcome {
	if err := ctx.Err(); err != nil {
		return callOutcome{status: callCancelled, err: fmt.Errorf("tool %s: %w", name, err)}
	}
	return callOutcome{status: callFailed, err: fmt.Errorf("tool %s timed out after %s", name, timeout)}
}
