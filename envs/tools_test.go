package envs

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
)

// The tools the tests run. Each is a real Tool with one behaviour.

// echoTool returns its text and reports the titles given in refs.
type echoTool struct{ calls atomic.Int32 }

func (*echoTool) Name() string        { return "echo" }
func (*echoTool) Description() string { return "Repeat the text." }
func (*echoTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","minLength":1},` +
		`"refs":{"type":"array","items":{"type":"string"}}},"required":["text"],"additionalProperties":false}`)
}
func (t *echoTool) Call(_ context.Context, args json.RawMessage) (Result, error) {
	t.calls.Add(1)
	var in struct {
		Text string   `json:"text"`
		Refs []string `json:"refs"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return Result{}, err
	}
	return Result{Content: in.Text, OK: true, Refs: in.Refs}, nil
}

// noArgs is the parameters schema of the tools below.
var noArgs = json.RawMessage(`{"type":"object","properties":{}}`)

// failTool always returns an error.
type failTool struct{}

func (failTool) Name() string                { return "fail" }
func (failTool) Description() string         { return "Always fails." }
func (failTool) Parameters() json.RawMessage { return noArgs }
func (failTool) Call(context.Context, json.RawMessage) (Result, error) {
	return Result{}, errors.New("no such page")
}

// panicTool panics.
type panicTool struct{}

func (panicTool) Name() string                { return "boom" }
func (panicTool) Description() string         { return "Panics." }
func (panicTool) Parameters() json.RawMessage { return noArgs }
func (panicTool) Call(context.Context, json.RawMessage) (Result, error) {
	panic("index out of range")
}

// hangTool ignores its context and blocks until release is closed.
type hangTool struct{ release chan struct{} }

func (hangTool) Name() string                { return "hang" }
func (hangTool) Description() string         { return "Never returns in time." }
func (hangTool) Parameters() json.RawMessage { return noArgs }
func (t hangTool) Call(context.Context, json.RawMessage) (Result, error) {
	<-t.release
	return Result{Content: "too late", OK: true}, nil
}

// waitTool honours its context: it returns the context's error when it
// expires, after signalling started.
type waitTool struct{ started chan struct{} }

func (waitTool) Name() string                { return "wait" }
func (waitTool) Description() string         { return "Waits for its context." }
func (waitTool) Parameters() json.RawMessage { return noArgs }
func (t waitTool) Call(ctx context.Context, _ json.RawMessage) (Result, error) {
	if t.started != nil {
		t.started <- struct{}{}
	}
	<-ctx.Done()
	return Result{}, ctx.Err()
}

// gateTool signals started, then blocks until open is closed.
type gateTool struct{ started, open chan struct{} }

func (gateTool) Name() string                { return "gate" }
func (gateTool) Description() string         { return "Waits for the test." }
func (gateTool) Parameters() json.RawMessage { return noArgs }
func (t gateTool) Call(context.Context, json.RawMessage) (Result, error) {
	t.started <- struct{}{}
	<-t.open
	return Result{Content: "opened", OK: true}, nil
}

// barrierTool returns only once n calls are running at the same time, so
// sequential execution would time out. Each call answers with its id.
type barrierTool struct {
	n       int32
	arrived atomic.Int32
	all     chan struct{}
}

func newBarrierTool(n int32) *barrierTool { return &barrierTool{n: n, all: make(chan struct{})} }

func (*barrierTool) Name() string { return "barrier" }
func (*barrierTool) Description() string {
	return "Returns when all calls have arrived."
}
func (*barrierTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"]}`)
}
func (t *barrierTool) Call(ctx context.Context, args json.RawMessage) (Result, error) {
	var in struct {
		ID int `json:"id"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return Result{}, err
	}
	if t.arrived.Add(1) == t.n {
		close(t.all)
	}
	select {
	case <-t.all:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
	return Result{Content: "call " + string(rune('0'+in.ID)), OK: true}, nil
}

// emptyTool succeeds with no content.
type emptyTool struct{}

func (emptyTool) Name() string                { return "empty" }
func (emptyTool) Description() string         { return "Says nothing." }
func (emptyTool) Parameters() json.RawMessage { return noArgs }
func (emptyTool) Call(context.Context, json.RawMessage) (Result, error) {
	return Result{OK: true}, nil
}
