package calculator

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

func TestCall(t *testing.T) {
	tool := New()
	res, err := tool.Call(context.Background(), json.RawMessage(`{"expression":"(3 + 4.5) * 2^10"}`))
	// (7.5) * 1024 = 7680
	if err != nil || res.Content != "7680" || !res.OK {
		t.Errorf("Call = %+v, %v; want 7680", res, err)
	}
	_, err = tool.Call(context.Background(), json.RawMessage(`{"expression":"1/0"}`))
	if err == nil || !strings.Contains(err.Error(), "division by zero at position 2") {
		t.Errorf("1/0: err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tool.Call(ctx, json.RawMessage(`{"expression":"1"}`)); err == nil {
		t.Error("a cancelled context was ignored")
	}
}

func TestParametersSchema(t *testing.T) {
	tool := New()
	s, err := envs.CompileSchema(tool.Parameters())
	if err != nil {
		t.Fatalf("schema does not compile: %v", err)
	}
	if err := s.Validate(json.RawMessage(`{"expression":"1+1"}`)); err != nil {
		t.Errorf("good arguments rejected: %v", err)
	}
	for _, bad := range []string{`{}`, `{"expression":""}`, `{"expression":1}`, `{"expression":"1","x":2}`,
		`{"expression":"` + strings.Repeat("1", MaxLength+1) + `"}`} {
		if err := s.Validate(json.RawMessage(bad)); err == nil {
			t.Errorf("bad arguments %.40s accepted", bad)
		}
	}
}
