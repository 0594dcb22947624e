package rollout

import (
	"strings"
	"testing"

	"github.com/agentrl/agentrl/toolcall"
)

// A rendered context reads Qwen3.5's XML calls back: the assistant message
// holds the text before the calls and each call with its parameters'
// texts as an object (which the template writes back unchanged), and the
// summary lists the calls it replaces.
func TestContextMessagesQwenXML(t *testing.T) {
	call := func(q string) string {
		return toolcall.XMLToolCall("search", []toolcall.XMLParam{{Key: "query", Value: q}, {Key: "k", Value: "3"}})
	}
	turns := []ConvTurn{
		{Text: "first\n</think>\n\n" + call("Kamo"), Responses: []string{"Kamo is a river."}},
		{Text: "second\n</think>\n\nLooking.\n\n" + call("Sava"), Responses: []string{"Sava too."}},
	}
	ctx := Context{Mode: ContextSummary, Turns: 1, Calls: toolcall.QwenXML}
	msgs := ctx.Messages("sys", "q", turns)
	if len(msgs) != 5 || !strings.Contains(msgs[2].Content, `- search {"query":"Kamo","k":"3"}: Kamo is a river.`) {
		t.Fatalf("messages %+v, want system, question, a summary naming the first call, the second turn and its response", msgs)
	}
	a := msgs[3]
	if a.Role != "assistant" || a.Content != "second\n</think>\n\nLooking." || len(a.ToolCalls) != 1 ||
		a.ToolCalls[0].Name != "search" || string(a.ToolCalls[0].Arguments) != `{"query":"Sava","k":"3"}` {
		t.Errorf("assistant message %+v", a)
	}
	// Read as Hermes (the zero value), the XML turn holds no call.
	if m := (Context{Mode: ContextTemplate}).Messages("", "q", turns[:1]); len(m[1].ToolCalls) != 0 {
		t.Errorf("Hermes read an XML call: %+v", m[1])
	}
}

// As a message, a Qwen3.5 turn's XML call keeps its arguments as the
// object of the parameters' texts; a Hermes call's arguments are a JSON
// string holding the text the model wrote.
func TestAssistantMessage(t *testing.T) {
	call := toolcall.XMLToolCall("search", []toolcall.XMLParam{{Key: "query", Value: "Kamo"}, {Key: "k", Value: "3"}})
	m := assistantMessage(toolcall.QwenXML, "Searching.\n\n"+call)
	if m.Content != "Searching." || len(m.ToolCalls) != 1 || string(m.ToolCalls[0].Arguments) != `{"query":"Kamo","k":"3"}` {
		t.Errorf("assistantMessage(QwenXML) = %+v", m)
	}
	hermes := assistantMessage(toolcall.Hermes, "<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"Kamo\"}}\n</tool_call>")
	if len(hermes.ToolCalls) != 1 || string(hermes.ToolCalls[0].Arguments) != `"{\"query\": \"Kamo\"}"` {
		t.Errorf("assistantMessage(Hermes) = %+v", hermes)
	}
}
