package envs

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestSchemas(t *testing.T) {
	out, err := Schemas([]Tool{failTool{}, &echoTool{}})
	if err != nil {
		t.Fatal(err)
	}
	want0 := `{"type":"function","function":{"name":"fail","description":"Always fails.","parameters":{"type":"object","properties":{}}}}`
	if string(out[0]) != want0 {
		t.Errorf("got  %s\nwant %s", out[0], want0)
	}
	// The echo schema keeps its key order ("text" before "refs") and is compacted.
	if !strings.HasPrefix(string(out[1]), `{"type":"function","function":{"name":"echo","description":"Repeat the text.","parameters":{"type":"object","properties":{"text":`) {
		t.Errorf("echo schema: %s", out[1])
	}
	out, err = Schemas([]Tool{describedTool{"Returns <answer> & more"}})
	if err != nil || !strings.Contains(string(out[0]), `"Returns <answer> & more"`) {
		t.Errorf("HTML characters escaped or error: %s, %v", out, err)
	}
	if _, err := Schemas([]Tool{brokenParams{}}); err == nil || !strings.Contains(err.Error(), "tool fail") {
		t.Errorf("invalid parameters JSON: err = %v", err)
	}
}

type describedTool struct{ desc string }

func (describedTool) Name() string                                          { return "d" }
func (d describedTool) Description() string                                 { return d.desc }
func (describedTool) Parameters() json.RawMessage                           { return noArgs }
func (describedTool) Call(context.Context, json.RawMessage) (Result, error) { return Result{}, nil }

type brokenParams struct{ failTool }

func (brokenParams) Parameters() json.RawMessage { return json.RawMessage(`{"type":`) }

// badSchema is a tool whose parameters the validator does not support.
type badSchema struct{ failTool }

func (badSchema) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","format":"uri"}}}`)
}
