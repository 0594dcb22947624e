package toolcall

import "testing"

// A Qwen3.5 turn splits into its content (less the template's "\n\n") and
// its XML calls, whose arguments are the parameters' texts.
func TestSplitXML(t *testing.T) {
	call := XMLToolCall("search", []XMLParam{{Key: "query", Value: "Kamo"}, {Key: "k", Value: "3"}})
	head, calls, ok := Split(QwenXML, "Searching.\n\n"+call)
	if !ok || head != "Searching." || len(calls) != 1 || calls[0].Name != "search" || calls[0].Args != `{"query":"Kamo","k":"3"}` {
		t.Fatalf("Split = %q, %+v, %v", head, calls, ok)
	}
	if _, _, ok := Split(QwenXML, "<tool_call>\n{\"name\": \"search\"}\n</tool_call>"); ok {
		t.Error("a Hermes block read as an XML call")
	}
}

// A Qwen3.5 turn whose reasoning mentions <tool_call> splits at the call
// after the reasoning: the head is the reasoning and the content before
// the call, whole; a turn whose only mention is in the reasoning holds no
// call.
func TestSplitXMLReasoningMentionsTheTag(t *testing.T) {
	reasoning := "I will write <tool_call> next.\n</think>\n\n"
	call := XMLToolCall("search", []XMLParam{{Key: "query", Value: "Kamo"}})
	head, calls, ok := Split(QwenXML, reasoning+"Searching.\n\n"+call)
	if !ok || head != reasoning+"Searching." || len(calls) != 1 || calls[0].Name != "search" || calls[0].Args != `{"query":"Kamo"}` {
		t.Fatalf("Split = %q, %+v, %v", head, calls, ok)
	}
	text := reasoning + "<answer>Paris</answer>"
	if head, calls, ok := Split(QwenXML, text); ok || head != text || calls != nil {
		t.Errorf("a mention in the reasoning alone: Split = %q, %+v, %v; want the text, no call", head, calls, ok)
	}
}

// A Qwen3 turn whose reasoning mentions <tool_call> splits at the call
// after the reasoning: the head is the reasoning and the content before
// the call (less one newline), each call's arguments as written; a turn
// whose only mention is in the reasoning holds no call.
func TestSplitHermesReasoningMentionsTheTag(t *testing.T) {
	reasoning := "<think>\nI will write <tool_call> next.\n</think>\n\n"
	call := ToolCall("search", `{"query":  "Kamo"}`)
	head, calls, ok := Split(Hermes, reasoning+"Searching.\n"+call)
	if !ok || head != reasoning+"Searching." || len(calls) != 1 || calls[0].Name != "search" || calls[0].Args != `{"query":  "Kamo"}` {
		t.Fatalf("Split = %q, %+v, %v", head, calls, ok)
	}
	text := reasoning + "<answer>Paris</answer>"
	if head, calls, ok := Split(Hermes, text); ok || head != text || calls != nil {
		t.Errorf("a mention in the reasoning alone: Split = %q, %+v, %v; want the text, no call", head, calls, ok)
	}
}

// A Gemma 4 turn splits into the text before its first call (the thought
// channel, which may mention the tags) and its calls, each call's
// arguments the JSON object of what it wrote; a mention in the thought
// alone is no call.
func TestSplitGemma4(t *testing.T) {
	thought := "<|channel>thought\nI will write <|tool_call> next.\n<channel|>"
	call := Gemma4ToolCall("search", "k:3,query:"+Gemma4Quote+"Kamo"+Gemma4Quote) + Gemma4ToolCall("lookup", "")
	head, calls, ok := Split(Gemma4, thought+call+Gemma4ResponseOpen)
	if !ok || head != thought || len(calls) != 2 || calls[0].Name != "search" || calls[0].Args != `{"k":3,"query":"Kamo"}` ||
		calls[1].Name != "lookup" || calls[1].Args != `{}` {
		t.Fatalf("Split = %q, %+v, %v", head, calls, ok)
	}
	text := thought + "<answer>Paris</answer>"
	if head, calls, ok := Split(Gemma4, text); ok || head != text || calls != nil {
		t.Errorf("a mention in the reasoning alone: Split = %q, %+v, %v; want the text, no call", head, calls, ok)
	}
}
