package toolcall

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseLlamaValid(t *testing.T) {
	search := []Call{{"search", []byte(`{"query":"Eiffel Tower"}`)}}
	cases := []struct {
		name string
		text string
		want []Call
	}{
		{"as the template renders it", `{"name": "search", "parameters": {"query": "Eiffel Tower"}}<|eot_id|>`, search},
		{"without the end of turn", `{"name": "search", "parameters": {"query": "Eiffel Tower"}}`, search},
		{"ended by eom", "{\"name\":\"search\",\"parameters\":{\"query\":\"Eiffel Tower\"}}\n<|eom_id|>", search},
		{"white space around", "\n  {\"name\": \"search\", \"parameters\": {\"query\": \"Eiffel Tower\"}} \n<|eot_id|>\n", search},
		// Meta's prompt format shows the models writing the tag first under
		// "Environment: ipython", and a "type" key.
		{"python tag", `<|python_tag|>{"type": "function", "name": "search", "parameters": {"query": "Eiffel Tower"}}<|eom_id|>`, search},
		{"absent parameters", `{"name": "now"}<|eot_id|>`, []Call{{"now", []byte(`{}`)}}},
		{"null parameters", `{"name": "now", "parameters": null}`, []Call{{"now", []byte(`{}`)}}},
		{"nested parameters compacted", "{\"name\": \"a\", \"parameters\": { \"list\" : [1, 2],\n \"o\": {\"p\": true} }}",
			[]Call{{"a", []byte(`{"list":[1,2],"o":{"p":true}}`)}}},
		{"an answer", "<answer>Paris</answer><|eot_id|>", nil},
		{"text before a call", `I will search: {"name": "search", "parameters": {}}`, nil},
		{"a Hermes call", "<tool_call>\n{\"name\": \"search\", \"arguments\": {}}\n</tool_call>", nil},
		{"empty", "", nil},
		{"only the end of turn", "<|eot_id|>", nil},
	}
	for _, c := range cases {
		got, err := ParseLlama(c.text)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestParseLlamaErrors(t *testing.T) {
	cases := []struct {
		name string
		text string
		kind ParseErrorKind
		msg  string // a fragment of the message, quoting the offending part
	}{
		{"cut off", `{"name": "search", "parameters": {"query": "Eif`, KindMalformedJSON, "not valid JSON (unexpected EOF): `{\"name\": \"search\""},
		{"single quotes", `{'name': 'search'}<|eot_id|>`, KindMalformedJSON, "not valid JSON"},
		{"missing name", `{"parameters": {"query": "x"}}`, KindMissingName, `has no "name": ` + "`{\"parameters\""},
		{"empty name", `{"name": " ", "parameters": {}}`, KindMissingName, "non-empty string, got `\" \"`"},
		{"number name", `{"name": 5}`, KindMissingName, "got `5`"},
		{"string parameters", `{"name": "search", "parameters": "{\"query\": \"x\"}"}`, KindBadArguments, `(search): "parameters" must be a JSON object, got ` + "`\"{"},
		{"array parameters", `{"name": "search", "parameters": [1]}`, KindBadArguments, "got `[1]`"},
		{"Hermes' arguments", `{"name": "search", "arguments": {"query": "x"}}`, KindBadArguments, `go in "parameters", not "arguments"`},
		{"trailing text", `{"name": "search", "parameters": {}} and then I answer`, KindTrailingText, "after tool call 1 (end the turn after its JSON object): `and then I answer`"},
		{"text after the end of turn", `{"name": "search"}<|eot_id|>more`, KindTrailingText, "`<|eot_id|>more`"},
		{"two ends of turn", `{"name": "search"}<|eot_id|><|eot_id|>`, KindTrailingText, "`<|eot_id|>`"},
		{"extra brace", `{"name": "search"}}`, KindTrailingText, "`}`"},
		{"two objects", "{\"name\": \"a\", \"parameters\": {}}\n{\"name\": \"b\", \"parameters\": {}}<|eot_id|>", KindTrailingText,
			"a second tool call after tool call 1: Llama 3's format makes one call per turn: `{\"name\": \"b\""},
	}
	for _, c := range cases {
		calls, err := ParseLlama(c.text)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: got calls %v, err %v; want a *ParseError", c.name, calls, err)
			continue
		}
		if pe.Kind != c.kind || pe.Call != 1 || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%s: got %s (call %d) %q; want %s (call 1) containing %q", c.name, pe.Kind, pe.Call, pe.Msg, c.kind, c.msg)
		}
		if calls != nil {
			t.Errorf("%s: calls returned with an error: %v", c.name, calls)
		}
	}
}

// Parse reads each syntax with its parser, and neither reads
// the other's calls; a syntax it does not know is an error.
func TestParse(t *testing.T) {
	hermes := ToolCall("search", `{"query": "x"}`)
	llama := LlamaToolCall("search", `{"query": "x"}`) + LlamaEOT
	want := []Call{{"search", []byte(`{"query":"x"}`)}}
	for _, c := range []struct {
		syntax CallSyntax
		text   string
		want   []Call
	}{
		{Hermes, hermes, want}, {LlamaJSON, llama, want},
		{Hermes, llama, nil}, {LlamaJSON, hermes, nil},
	} {
		got, err := Parse(c.syntax, c.text, nil)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("Parse(%v, %q) = %+v, %v; want %+v", c.syntax, c.text, got, err, c.want)
		}
	}
	if _, err := Parse(CallSyntax(7), llama, nil); err == nil || !strings.Contains(err.Error(), "CallSyntax(7)") {
		t.Errorf("unknown syntax: err = %v", err)
	}
}
