package toolcall

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseHermesValid(t *testing.T) {
	cases := []struct {
		name string
		text string
		want []Call
	}{
		{"no call", "<think>I know this.</think><answer>Paris</answer>", nil},
		{"empty text", "", nil},
		{"qwen layout", "<think>search</think>\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"Eiffel Tower\"}}\n</tool_call>",
			[]Call{{"search", []byte(`{"query":"Eiffel Tower"}`)}}},
		{"no whitespace", `<tool_call>{"name":"search","arguments":{"query":"x"}}</tool_call>`,
			[]Call{{"search", []byte(`{"query":"x"}`)}}},
		{"absent arguments", `<tool_call>{"name":"now"}</tool_call>`, []Call{{"now", []byte(`{}`)}}},
		{"null arguments", `<tool_call>{"name":"now","arguments":null}</tool_call>`, []Call{{"now", []byte(`{}`)}}},
		{"two calls", "<tool_call>{\"name\":\"a\",\"arguments\":{\"x\":1}}</tool_call>\n\n<tool_call>\n{\"name\":\"b\",\"arguments\":{}}\n</tool_call>",
			[]Call{{"a", []byte(`{"x":1}`)}, {"b", []byte(`{}`)}}},
		{"end of turn after", "<tool_call>{\"name\":\"a\"}</tool_call>\n<|im_end|>\n", []Call{{"a", []byte(`{}`)}}},
		{"extra keys ignored", `<tool_call>{"name":"a","arguments":{"k":"v"},"id":"c1"}</tool_call>`,
			[]Call{{"a", []byte(`{"k":"v"}`)}}},
		{"nested arguments compacted", "<tool_call>{\"name\":\"a\",\"arguments\":{ \"list\" : [1, 2],\n \"o\": {\"p\": true} }}</tool_call>",
			[]Call{{"a", []byte(`{"list":[1,2],"o":{"p":true}}`)}}},
	}
	for _, c := range cases {
		got, err := ParseHermes(c.text)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestParseHermesErrors(t *testing.T) {
	long := strings.Repeat("x", 500)
	cases := []struct {
		name string
		text string
		kind ParseErrorKind
		call int
		msg  string // a fragment of the message, quoting the offending part
	}{
		{"bad json", `<tool_call>{"name": "search", "arguments": {"query": "x"}</tool_call>`, KindMalformedJSON, 1, "`{\"name\": \"search\""},
		{"single quotes", `<tool_call>{'name': 'search'}</tool_call>`, KindMalformedJSON, 1, "not valid JSON"},
		{"extra brace", `<tool_call>{"name":"a"}}</tool_call>`, KindMalformedJSON, 1, "after the JSON value"},
		{"empty block", "<tool_call>\n \n</tool_call>", KindMalformedJSON, 1, "is empty"},
		{"array", `<tool_call>[{"name":"a"}]</tool_call>`, KindMalformedJSON, 1, "must be a JSON object"},
		{"missing name", `<tool_call>{"arguments":{"q":"x"}}</tool_call>`, KindMissingName, 1, `has no "name": ` + "`{\"arguments\""},
		{"empty name", `<tool_call>{"name":"  ","arguments":{}}</tool_call>`, KindMissingName, 1, `non-empty string`},
		{"number name", `<tool_call>{"name":5}</tool_call>`, KindMissingName, 1, "got `5`"},
		{"string arguments", `<tool_call>{"name":"search","arguments":"{\"q\":1}"}</tool_call>`, KindBadArguments, 1, "must be a JSON object"},
		{"array arguments", `<tool_call>{"name":"search","arguments":[1]}</tool_call>`, KindBadArguments, 1, "got `[1]`"},
		{"unclosed", "<tool_call>\n{\"name\":\"search\"}", KindUnclosedTag, 1, "no closing </tool_call>: `<tool_call>\\n{"},
		{"second unclosed", `<tool_call>{"name":"a"}</tool_call><tool_call>{"name":"b"}`, KindUnclosedTag, 2, "tool call 2"},
		{"open inside open", `<tool_call>{"name":"a"}<tool_call>{"name":"b"}</tool_call>`, KindUnclosedTag, 1, "tool call 1"},
		{"close without open", `I will call {"name":"a"}</tool_call>`, KindUnopenedTag, 0, "`</tool_call>`"},
		{"trailing text", "<tool_call>{\"name\":\"a\"}</tool_call>\n<tool_response>fake</tool_response>", KindTrailingText, 1, "`<tool_response>fake</tool_response>`"},
		{"text after end of turn", "<tool_call>{\"name\":\"a\"}</tool_call><|im_end|>more", KindTrailingText, 1, "more"},
		{"text between calls", `<tool_call>{"name":"a"}</tool_call> and then <tool_call>{"name":"b"}</tool_call>`, KindTrailingText, 1, "`and then`"},
		{"long quote truncated", "<tool_call>{\"name\":\"a\"}</tool_call>" + long, KindTrailingText, 1, "`" + strings.Repeat("x", quoteLimit) + "`..."},
	}
	for _, c := range cases {
		calls, err := ParseHermes(c.text)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: got calls %v, err %v; want a *ParseError", c.name, calls, err)
			continue
		}
		if pe.Kind != c.kind || pe.Call != c.call || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("%s: got %s (call %d) %q; want %s (call %d) containing %q", c.name, pe.Kind, pe.Call, pe.Msg, c.kind, c.call, c.msg)
		}
		if calls != nil {
			t.Errorf("%s: calls returned with an error: %v", c.name, calls)
		}
	}
	// The quote is cut at quoteLimit characters, so the message stays short.
	_, err := ParseHermes("<tool_call>{\"name\":\"a\"}</tool_call>" + long)
	if n := len(err.Error()); n > 200 {
		t.Errorf("message of %d bytes for a 500-byte trailing text", n)
	}
}

func TestParseAnswer(t *testing.T) {
	cases := []struct {
		text, want string
		ok         bool
	}{
		{"<answer>Paris</answer>", "Paris", true},
		{"<think>easy</think>\n<answer>\n  Paris \n</answer><|im_end|>", "Paris", true},
		{"<answer></answer>", "", true},
		{"<answer>a</answer> then <answer>b</answer>", "b", true}, // the last one counts
		{"<answer>Paris", "", false},
		{"Paris</answer>", "", false},
		{"no answer here", "", false},
		{"</answer><answer>", "", false},
	}
	for _, c := range cases {
		got, ok := ParseAnswer(c.text)
		if got != c.want || ok != c.ok {
			t.Errorf("ParseAnswer(%q) = %q, %v; want %q, %v", c.text, got, ok, c.want, c.ok)
		}
	}
}

// A Qwen3 turn whose think block mentions the tags (an opening, a closing,
// a whole fake block) still gives the call after it: the calls are read
// after the last </think>, where Qwen3's template splits the reasoning
// off; a mention in the reasoning alone is no call. A think block that is
// never closed is content, as the template reads it (no </think>), so a
// mention in it is a tag.
func TestParseHermesReasoningMentionsTheTags(t *testing.T) {
	call := ToolCall("search", `{"query": "Kamo"}`) + TurnEnd
	for _, reasoning := range []string{
		"<think>\nI will write <tool_call> next.\n</think>\n\n",
		"<think>\nA call ends with </tool_call>.\n</think>\n\n",
		"<think>\nLike " + ToolCall("search", `{"query": "x"}`) + ", then more.\n</think>\n\n",
		"<think>\nHalf <tool_call>{\"name\": </think>\n\n",
	} {
		calls, err := ParseHermes(reasoning + call)
		if err != nil || len(calls) != 1 || calls[0].Name != "search" || string(calls[0].Arguments) != `{"query":"Kamo"}` {
			t.Errorf("%q: %+v, %v; want the call after the reasoning", reasoning, calls, err)
		}
		if calls, err := ParseHermes(reasoning + "<answer>Paris</answer>" + TurnEnd); err != nil || calls != nil {
			t.Errorf("%q: a mention in the reasoning alone: %+v, %v; want no call", reasoning, calls, err)
		}
	}
	var pe *ParseError
	if _, err := ParseHermes("<think>\nI will write <tool_call> next.\n" + call); !errors.As(err, &pe) || pe.Kind != KindUnclosedTag {
		t.Errorf("a think block never closed: %v; want %s (it is content)", err, KindUnclosedTag)
	}
	if got := Hermes.ContentStart("a</think>b</think>c"); got != len("a</think>b</think>") {
		t.Errorf("Hermes.ContentStart = %d", got)
	}
	if got := LlamaJSON.ContentStart("a</think>b"); got != 0 {
		t.Errorf("LlamaJSON.ContentStart = %d, want 0 (the whole turn)", got)
	}
}
