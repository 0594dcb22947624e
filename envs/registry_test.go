package envs

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// renamed is a tool that reports another name than the one it was
// registered under.
type renamed struct{ failTool }

func (renamed) Name() string { return "other" }

// badSchema is a tool whose parameters the validator does not support.
type badSchema struct{ failTool }

func (badSchema) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"q":{"type":"string","format":"uri"}}}`)
}

func testRegistry() *Registry {
	r := NewRegistry()
	r.Register("echo", func(map[string]any) (Tool, error) { return &echoTool{}, nil })
	r.Register("fail", func(cfg map[string]any) (Tool, error) {
		if cfg["broken"] == true {
			return nil, errors.New("index missing")
		}
		return failTool{}, nil
	})
	r.Register("renamed", func(map[string]any) (Tool, error) { return renamed{}, nil })
	r.Register("badschema", func(map[string]any) (Tool, error) { return badSchema{}, nil })
	r.Register("nil", func(map[string]any) (Tool, error) { return nil, nil })
	return r
}

func TestRegistryBuild(t *testing.T) {
	r := testRegistry()
	tools, err := r.Build([]string{"fail", "echo"}, map[string]map[string]any{"fail": {"broken": false}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != 2 || tools[0].Name() != "fail" || tools[1].Name() != "echo" {
		t.Errorf("built %v, want fail then echo", tools)
	}
	if tools, err := r.Build(nil, nil); err != nil || len(tools) != 0 {
		t.Errorf("no names: %v, %v", tools, err)
	}
	want := []string{"badschema", "echo", "fail", "nil", "renamed"}
	if got := r.Names(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Names = %v, want %v", got, want)
	}
}

func TestRegistryBuildErrors(t *testing.T) {
	r := testRegistry()
	cases := []struct {
		names []string
		cfg   map[string]map[string]any
		want  string
	}{
		{[]string{"search"}, nil, `unknown tool "search" (known: badschema, echo, fail, nil, renamed)`},
		{[]string{"echo", "echo"}, nil, `tool "echo" listed twice`},
		{[]string{"fail"}, map[string]map[string]any{"fail": {"broken": true}}, `build tool "fail": index missing`},
		{[]string{"echo"}, map[string]map[string]any{"ecoh": {}}, `tool config names unknown tool "ecoh"`},
		{[]string{"renamed"}, nil, `build tool "renamed": the tool calls itself "other"`},
		{[]string{"badschema"}, nil, `schema.properties.q.format: unsupported schema keyword`},
		{[]string{"nil"}, nil, `build tool "nil": nil tool`},
	}
	for _, c := range cases {
		_, err := r.Build(c.names, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Build(%v) = %v, want %q", c.names, err, c.want)
		}
	}
}

func TestRegistryRegisterPanicsOnMisuse(t *testing.T) {
	r := testRegistry()
	for name, f := range map[string]Factory{
		"echo": func(map[string]any) (Tool, error) { return &echoTool{}, nil }, // taken
		"":     func(map[string]any) (Tool, error) { return &echoTool{}, nil }, // empty
		"new":  nil,
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", name)
				}
			}()
			r.Register(name, f)
		}()
	}
}

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
