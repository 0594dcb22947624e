package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
)

var parseErrorKinds = []ParseErrorKind{KindMalformedJSON, KindMissingName, KindBadArguments,
	KindUnclosedTag, KindUnopenedTag, KindTrailingText}

// FuzzParseHermes checks that the parser never panics, that every error
// is a *ParseError of a known kind, and that every success yields named
// calls with object arguments that survive a render-and-parse round trip.
func FuzzParseHermes(f *testing.F) {
	for _, s := range []string{
		"", "<answer>x</answer>",
		"<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"q\"}}\n</tool_call>",
		"<tool_call>{\"name\":\"a\"}</tool_call>\n<tool_call>{\"name\":\"b\",\"arguments\":{}}</tool_call><|im_end|>",
		"<tool_call>{\"name\":\"a\"", "</tool_call>", "<tool_call>[]</tool_call>", "<tool_call>{\"name\":1}</tool_call>",
		"<tool_call>{\"name\":\"a\",\"arguments\":\"x\"}</tool_call>", "<tool_call>{}</tool_call>tail",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		calls, err := ParseHermes(text)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !slices.Contains(parseErrorKinds, pe.Kind) || pe.Msg == "" {
				t.Fatalf("ParseHermes(%q): error %v is not a *ParseError of a known kind", text, err)
			}
			if calls != nil {
				t.Fatalf("ParseHermes(%q): calls with an error", text)
			}
			return
		}
		rendered := ""
		for _, c := range calls {
			var obj map[string]any
			if c.Name == "" || json.Unmarshal(c.Arguments, &obj) != nil || obj == nil {
				t.Fatalf("ParseHermes(%q): bad call %+v", text, c)
			}
			name, _ := json.Marshal(c.Name)
			rendered += fmt.Sprintf("<tool_call>\n{\"name\": %s, \"arguments\": %s}\n</tool_call>\n", name, c.Arguments)
		}
		again, err := ParseHermes(rendered)
		if err != nil || !reflect.DeepEqual(again, calls) {
			t.Fatalf("round trip of %q: got %+v, %v; want %+v", text, again, err, calls)
		}
	})
}

// FuzzParseLlama checks the same of the Llama 3 parser: no panic,
// every error a *ParseError of a known kind, and a success is one named
// call with object arguments that survives a render-and-parse round trip.
func FuzzParseLlama(f *testing.F) {
	for _, s := range []string{
		"", "<answer>x</answer><|eot_id|>", `{"name": "search", "parameters": {"query": "q"}}<|eot_id|>`,
		`<|python_tag|>{"name":"a"}<|eom_id|>`, `{"name":"a"`, `{"name":"a"}{"name":"b"}`, `{"name":1}`,
		`{"name":"a","parameters":"x"}`, `{"name":"a","arguments":{}}`, `{}tail`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		calls, err := ParseLlama(text)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || !slices.Contains(parseErrorKinds, pe.Kind) || pe.Msg == "" || calls != nil {
				t.Fatalf("ParseLlama(%q): error %v is not a *ParseError of a known kind, or calls came with it", text, err)
			}
			return
		}
		if len(calls) == 0 {
			return
		}
		var obj map[string]any
		if c := calls[0]; len(calls) != 1 || c.Name == "" || json.Unmarshal(c.Arguments, &obj) != nil || obj == nil {
			t.Fatalf("ParseLlama(%q): bad calls %+v", text, calls)
		}
		name, _ := json.Marshal(calls[0].Name)
		again, err := ParseLlama(fmt.Sprintf("{\"name\": %s, \"parameters\": %s}<|eot_id|>", name, calls[0].Arguments))
		if err != nil || !reflect.DeepEqual(again, calls) {
			t.Fatalf("round trip of %q: got %+v, %v; want %+v", text, again, err, calls)
		}
	})
}
