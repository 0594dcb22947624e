package envs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// brokenTool fails as a tool whose server died.
type brokenTool struct{}

func (brokenTool) Name() string                { return "broken" }
func (brokenTool) Description() string         { return "Its server is down." }
func (brokenTool) Parameters() json.RawMessage { return noArgs }
func (brokenTool) Call(context.Context, json.RawMessage) (Result, error) {
	return Result{}, fmt.Errorf("broken: %w", Failure(errors.New("server exited")))
}

// A Failure error is shown to the model like any tool error, but is not
// the call's fault: no invalid-call penalty, unlike a plain error.
func TestFailureIsNotTheCallsFault(t *testing.T) {
	cfg := DefaultEnvConfig()
	cfg.Rewards.InvalidCall, cfg.Rewards.ValidCall = -1, 0
	env, err := NewToolEnv(Task{ID: "t"}, []Tool{brokenTool{}, failTool{}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := env.Step(context.Background(), Action{Text: `<tool_call>{"name":"broken","arguments":{}}</tool_call>`})
	if err != nil || res.Calls[0].OK || res.Responses[0] != "Error: broken: server exited" || res.ProcessReward != 0 {
		t.Fatalf("failure: %+v %v", res, err)
	}
	res, err = env.Step(context.Background(), Action{Text: `<tool_call>{"name":"fail","arguments":{}}</tool_call>`})
	if err != nil || res.ProcessReward != -1 {
		t.Fatalf("plain error: %+v %v", res, err)
	}
	if Failure(nil) != nil || IsFailure(errors.New("x")) {
		t.Fatal("Failure(nil) or IsFailure of a plain error")
	}
}
