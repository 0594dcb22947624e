package toolcall

import (
	"errors"
	"testing"
)

// TestParseGemma4 reads calls as Gemma 4's chat template writes them
// (transformers' rendering of the same calls is checked in the tokenizer's
// interop test) and refuses malformed ones with the right kind.
func TestParseGemma4(t *testing.T) {
	q := Gemma4Quote
	ok := []struct {
		text string
		want []Call
	}{
		{"", nil},
		{"just an answer<turn|>", nil},
		{Gemma4ToolCall("search", "query:"+q+"Doctor Strange"+q) + Gemma4ResponseOpen,
			[]Call{{"search", []byte(`{"query":"Doctor Strange"}`)}}},
		// Thought channel first; every value type; nested keys bare; a
		// string that spells the delimiters of everything but itself.
		{"<|channel>thought\nlet me look<channel|>" + Gemma4ToolCall("search",
			"exact:true,filters:{lang:"+q+"en"+q+",year:[1950,1960.0]},k:3,none:null,query:"+q+"a, b: {c} <tool_call|x>\n"+q) +
			" \n" + Gemma4ToolCall("calculate", "") + Gemma4ResponseOpen,
			[]Call{{"search", []byte(`{"exact":true,"filters":{"lang":"en","year":[1950,1960.0]},"k":3,"none":null,"query":"a, b: {c} <tool_call|x>\n"}`)},
				{"calculate", []byte(`{}`)}}},
		{Gemma4ToolCall("f", "xs:[],o:{},e:"+q+q) + "\n", []Call{{"f", []byte(`{"xs":[],"o":{},"e":""}`)}}},
	}
	for _, c := range ok {
		calls, err := ParseGemma4(c.text)
		if err != nil {
			t.Errorf("%q: %v", c.text, err)
			continue
		}
		if len(calls) != len(c.want) {
			t.Errorf("%q: %d calls, want %d", c.text, len(calls), len(c.want))
			continue
		}
		for i := range calls {
			if calls[i].Name != c.want[i].Name || string(calls[i].Arguments) != string(c.want[i].Arguments) {
				t.Errorf("%q: call %d is %s(%s), want %s(%s)", c.text, i, calls[i].Name, calls[i].Arguments, c.want[i].Name, c.want[i].Arguments)
			}
		}
	}
	bad := []struct {
		text string
		kind ParseErrorKind
	}{
		{"a" + Gemma4CallClose, KindUnopenedTag},
		{Gemma4CallOpen + "call:f{}", KindUnclosedTag},
		{Gemma4CallOpen + "call:f{}" + Gemma4CallOpen + "call:g{}" + Gemma4CallClose, KindUnclosedTag},
		{Gemma4CallOpen + `{"name": "f"}` + Gemma4CallClose, KindMalformedCall},
		{Gemma4CallOpen + "call:f" + Gemma4CallClose, KindMalformedCall},
		{Gemma4ToolCall("", ""), KindMissingName},
		{Gemma4ToolCall("my tool", ""), KindMissingName},
		{Gemma4ToolCall("f", "a:1,a:2"), KindBadArguments},
		{Gemma4ToolCall("f", "a:"+q+"open"), KindBadArguments},
		{Gemma4ToolCall("f", "a:nan"), KindBadArguments},
		{Gemma4ToolCall("f", "a:word"), KindBadArguments},
		{Gemma4ToolCall("f", "a:[1,2"), KindBadArguments},
		{Gemma4ToolCall("f", "noval"), KindBadArguments},
		{Gemma4ToolCall("f", "a:1}{b:2"), KindBadArguments},
		{Gemma4ToolCall("f", "") + "then text" + Gemma4ResponseOpen, KindTrailingText},
		{Gemma4ToolCall("f", "") + Gemma4ResponseOpen + "more", KindTrailingText},
		{Gemma4ToolCall("f", "") + "x" + Gemma4ToolCall("g", ""), KindTrailingText},
	}
	for _, c := range bad {
		_, err := ParseGemma4(c.text)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Kind != c.kind {
			t.Errorf("%q: error %v, want kind %s", c.text, err, c.kind)
		}
	}
	if calls, err := Parse(Gemma4, Gemma4ToolCall("f", "a:1"), nil); err != nil || len(calls) != 1 {
		t.Errorf("Parse(Gemma4): %v, %v", calls, err)
	}
	if Gemma4.String() != "gemma4" {
		t.Errorf("String() = %q", Gemma4.String())
	}
}

// A thought channel that mentions the call tags is reasoning, not a call:
// the real call after it parses, and a turn whose only mention is in the
// reasoning holds none. The thought may also be one the observation opened
// (thinking on), which the turn only closes.
func TestParseGemma4ReasoningMentionsTheTags(t *testing.T) {
	call := Gemma4ToolCall("search", "query:"+Gemma4Quote+"Kamo"+Gemma4Quote) + Gemma4ResponseOpen
	for _, thought := range []string{
		"<|channel>thought\nI will write <|tool_call>call:search{ next, then <tool_call|>.\n<channel|>",
		"I could write <|tool_call> unclosed\n<channel|>",
	} {
		calls, err := ParseGemma4(thought + call)
		if err != nil || len(calls) != 1 || calls[0].Name != "search" || string(calls[0].Arguments) != `{"query":"Kamo"}` {
			t.Errorf("%q: %+v, %v; want the call after the reasoning", thought, calls, err)
		}
		if calls, err := ParseGemma4(thought + "<answer>Paris</answer><turn|>"); err != nil || calls != nil {
			t.Errorf("a mention in the reasoning alone: %+v, %v; want no call", calls, err)
		}
	}
	if got := Gemma4.ContentStart("a<channel|>b<channel|>c"); got != len("a<channel|>b<channel|>") {
		t.Errorf("ContentStart = %d", got)
	}
}
