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
