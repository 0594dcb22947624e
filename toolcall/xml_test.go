package toolcall

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// xmlSchemas declares one tool with a parameter of every type the parser
// reads, and a nullable one of each form.
var xmlSchemas = ParamSchemas{"calc": json.RawMessage(`{"type": "object", "properties": {
	"expr": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"}, "exact": {"type": "boolean"},
	"opts": {"type": "object"}, "list": {"type": "array"}, "maybe": {"type": ["null", "integer"]},
	"either": {"anyOf": [{"type": "null"}, {"type": "boolean"}]}}}`)}

func TestParseXMLValid(t *testing.T) {
	call := func(name string, params ...string) string {
		var ps []XMLParam
		for i := 0; i < len(params); i += 2 {
			ps = append(ps, XMLParam{Key: params[i], Value: params[i+1]})
		}
		return XMLToolCall(name, ps)
	}
	cases := []struct {
		name    string
		text    string
		schemas ParamSchemas
		want    []Call
	}{
		{"no call", "<think>\nI know.\n</think>\n\n<answer>Paris</answer>", nil, nil},
		{"template layout, untyped", "<think>\nsearch\n</think>\n\nLet me look.\n\n" + call("search", "query", "Eiffel Tower", "k", "3") + "<|im_end|>", nil,
			[]Call{{"search", []byte(`{"query":"Eiffel Tower","k":"3"}`)}}},
		{"typed by the schema", call("calc", "expr", "12", "n", "3", "x", "1.5e3", "exact", "True", "opts", `{"a": [1, 2]}`, "list", "[]",
			"maybe", "None", "either", "false"), xmlSchemas,
			[]Call{{"calc", []byte(`{"expr":"12","n":3,"x":1.5e3,"exact":true,"opts":{"a":[1,2]},"list":[],"maybe":null,"either":false}`)}}},
		{"text not of its type stays text", call("calc", "n", "3.0", "x", "inf", "exact", "yes", "opts", "[1]", "expr", "null"), xmlSchemas,
			[]Call{{"calc", []byte(`{"n":"3.0","x":"inf","exact":"yes","opts":"[1]","expr":"null"}`)}}},
		{"unknown tool and parameter are text", call("calc", "other", "5") + "\n" + call("nope", "n", "5"), xmlSchemas,
			[]Call{{"calc", []byte(`{"other":"5"}`)}, {"nope", []byte(`{"n":"5"}`)}}},
		{"multi-line value, markup kept", call("write", "text", "line one\n\n<b>two</b> & \"three\"\n"), nil,
			[]Call{{"write", []byte(`{"text":"line one\n\n<b>two</b> & \"three\"\n"}`)}}},
		{"a value that spells the closing tag", call("write", "text", "a </parameter> b", "n", "1"), nil,
			[]Call{{"write", []byte(`{"text":"a </parameter> b","n":"1"}`)}}},
		{"no parameters", call("now"), nil, []Call{{"now", []byte(`{}`)}}},
		{"tight layout", "<tool_call><function=f><parameter=a>x</parameter></function></tool_call>", nil,
			[]Call{{"f", []byte(`{"a":"x"}`)}}},
		{"empty value", "<tool_call>\n<function=f>\n<parameter=a>\n\n</parameter>\n</function>\n</tool_call>", nil,
			[]Call{{"f", []byte(`{"a":""}`)}}},
	}
	for _, c := range cases {
		got, err := ParseXML(c.text, c.schemas)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %s, want %s", c.name, show(got), show(c.want))
		}
	}
}

// show prints calls as name(arguments).
func show(calls []Call) string {
	var s []string
	for _, c := range calls {
		s = append(s, c.Name+"("+string(c.Arguments)+")")
	}
	return strings.Join(s, ", ")
}

func TestParseXMLErrors(t *testing.T) {
	cases := []struct {
		name string
		text string
		kind ParseErrorKind
		call int
		msg  string
	}{
		{"JSON inside", "<tool_call>\n{\"name\": \"search\", \"arguments\": {}}\n</tool_call>", KindMalformedXML, 1, "must start with <function=NAME>"},
		{"empty block", "<tool_call>\n\n</tool_call>", KindMalformedXML, 1, "is empty"},
		{"no function close", "<tool_call>\n<function=f>\n<parameter=a>\nx\n</parameter>\n</tool_call>", KindMalformedXML, 1, "has no </function>"},
		{"no name end", "<tool_call><function=f\n</tool_call>", KindMalformedXML, 1, `no ">" after <function=`},
		{"empty name", "<tool_call><function=></function></tool_call>", KindMissingName, 1, `got ""`},
		{"spaced name", "<tool_call><function=my tool></function></tool_call>", KindMissingName, 1, `got "my tool"`},
		{"no parameter close", "<tool_call><function=f><parameter=a>x</function></tool_call>", KindMalformedXML, 1, `parameter "a" has no </parameter>`},
		{"text before a parameter", "<tool_call><function=f>oops<parameter=b>y</parameter></function></tool_call>", KindMalformedXML, 1, "expected <parameter=KEY> or </function>, got `oops"},
		{"twice", "<tool_call><function=f><parameter=a>x</parameter><parameter=a>y</parameter></function></tool_call>", KindBadArguments, 1, `parameter "a" is given twice`},
		{"empty key", "<tool_call><function=f><parameter=>x</parameter></function></tool_call>", KindBadArguments, 1, "a parameter name must be non-empty"},
		{"second call bad", XMLToolCall("f", nil) + "\n<tool_call><function=g></tool_call>", KindMalformedXML, 2, "tool call 2 (g) has no </function>"},
		{"unclosed", "<tool_call>\n<function=f>\n", KindUnclosedTag, 1, "no closing </tool_call>"},
		{"text after", XMLToolCall("f", nil) + " and more", KindTrailingText, 1, "unexpected text after tool call 1"},
	}
	for _, c := range cases {
		_, err := ParseXML(c.text, nil)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: got %v, want a *ParseError", c.name, err)
			continue
		}
		if pe.Kind != c.kind || pe.Call != c.call || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%s: got %s call %d %q, want %s call %d containing %q", c.name, pe.Kind, pe.Call, pe.Msg, c.kind, c.call, c.msg)
		}
	}
}

// Parse reads the XML syntax with the schemas it is given.
func TestParseQwenXML(t *testing.T) {
	text := XMLToolCall("calc", []XMLParam{{Key: "n", Value: "7"}})
	got, err := Parse(QwenXML, text, xmlSchemas)
	if err != nil || len(got) != 1 || string(got[0].Arguments) != `{"n":7}` {
		t.Errorf("Parse(QwenXML) = %s, %v; want calc({\"n\":7})", show(got), err)
	}
	if _, err := Parse(Hermes, text, nil); err == nil {
		t.Error("the Hermes parser read an XML call")
	}
}
