package decoding

import (
	"testing"

	"github.com/agentrl/agentrl/agent/protocol"
)

// A Qwen3.5 turn splits into its content (less the template's "\n\n") and
// its XML calls, whose arguments are the parameters' texts; as a message,
// the arguments are that object (Hermes keeps a JSON string).
func TestSplitToolCallsInXML(t *testing.T) {
	call := protocol.XMLToolCall("search", []protocol.XMLParam{{Key: "query", Value: "Kamo"}, {Key: "k", Value: "3"}})
	head, calls, ok := SplitToolCallsIn(protocol.QwenXML, "Searching.\n\n"+call)
	if !ok || head != "Searching." || len(calls) != 1 || calls[0].Name != "search" || calls[0].Args != `{"query":"Kamo","k":"3"}` {
		t.Fatalf("SplitToolCallsIn = %q, %+v, %v", head, calls, ok)
	}
	m := AssistantMessageIn(protocol.QwenXML, "Searching.\n\n"+call)
	if m.Content != "Searching." || len(m.ToolCalls) != 1 || string(m.ToolCalls[0].Arguments) != `{"query":"Kamo","k":"3"}` {
		t.Errorf("AssistantMessageIn = %+v", m)
	}
	if _, _, ok := SplitToolCallsIn(protocol.QwenXML, "<tool_call>\n{\"name\": \"search\"}\n</tool_call>"); ok {
		t.Error("a Hermes block read as an XML call")
	}
	hermes := AssistantMessageIn(protocol.Hermes, "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"Kamo\"}}\n</tool_call>")
	if len(hermes.ToolCalls) != 1 || string(hermes.ToolCalls[0].Arguments) != `"{\"query\": \"Kamo\"}"` {
		t.Errorf("Hermes AssistantMessageIn = %+v", hermes)
	}
}

// A Qwen3.5 turn whose reasoning mentions <tool_call> splits at the call
// after the reasoning: the head is the reasoning and the content before
// the call, whole; a turn whose only mention is in the reasoning holds no
// call.
func TestSplitToolCallsInXMLReasoningMentionsTheTag(t *testing.T) {
	reasoning := "I will write <tool_call> next.\n</think>\n\n"
	call := protocol.XMLToolCall("search", []protocol.XMLParam{{Key: "query", Value: "Kamo"}})
	head, calls, ok := SplitToolCallsIn(protocol.QwenXML, reasoning+"Searching.\n\n"+call)
	if !ok || head != reasoning+"Searching." || len(calls) != 1 || calls[0].Name != "search" || calls[0].Args != `{"query":"Kamo"}` {
		t.Fatalf("SplitToolCallsIn = %q, %+v, %v", head, calls, ok)
	}
	text := reasoning + "<answer>Paris</answer>"
	if head, calls, ok := SplitToolCallsIn(protocol.QwenXML, text); ok || head != text || calls != nil {
		t.Errorf("a mention in the reasoning alone: SplitToolCallsIn = %q, %+v, %v; want the text, no call", head, calls, ok)
	}
}
