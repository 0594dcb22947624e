package decoding

import (
	"encoding/json"
	"strings"

	"github.com/agentrl/agentrl/agent/protocol"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/tokenizer"
)

// WrittenCall is one tool call as the model wrote it: the name and the
// arguments' JSON text unchanged, so that rendering them again gives the
// same tokens.
type WrittenCall struct {
	Name string
	Args string
}

// SplitToolCalls reads an assistant text the way a serving engine does:
// text holding well-formed <tool_call> blocks gives their calls and the
// text before the first block, without the one newline the chat template
// puts between content and calls; ok is false when the text has no call
// or a malformed one (then it is all content).
func SplitToolCalls(text string) (head string, calls []WrittenCall, ok bool) {
	if !strings.Contains(text, protocol.ToolCallOpen) {
		return text, nil, false
	}
	if _, err := envs.ParseToolCalls(text); err != nil {
		return text, nil, false
	}
	first := strings.Index(text, protocol.ToolCallOpen)
	head = strings.TrimSuffix(text[:first], "\n")
	for rest := text[first:]; ; {
		open := strings.Index(rest, protocol.ToolCallOpen)
		if open < 0 {
			break
		}
		rest = rest[open+len(protocol.ToolCallOpen):]
		end := strings.Index(rest, protocol.ToolCallClose)
		var body struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal([]byte(rest[:end]), &body) != nil {
			return text, nil, false
		}
		args := string(body.Arguments)
		if args == "" || args == "null" {
			args = "{}"
		}
		calls = append(calls, WrittenCall{Name: body.Name, Args: args})
		rest = rest[end+len(protocol.ToolCallClose):]
	}
	return head, calls, true
}

// SplitToolCallsIn is SplitToolCalls for a text written in syntax. For
// Qwen3.5's XML calls each call's Args is the JSON object of its
// parameters' texts (strings, in order; see envs.ParseXMLToolCalls without
// schemas), which the template writes back as they were written, and head
// is the text before the first call (after the reasoning, which may
// mention the tags) less the "\n\n" the template puts between content and
// calls. Any other syntax is read as Hermes blocks.
func SplitToolCallsIn(syntax protocol.CallSyntax, text string) (head string, calls []WrittenCall, ok bool) {
	if syntax != protocol.QwenXML {
		return SplitToolCalls(text)
	}
	if !strings.Contains(text, protocol.ToolCallOpen) {
		return text, nil, false
	}
	parsed, err := envs.ParseXMLToolCalls(text, nil)
	if err != nil || len(parsed) == 0 { // none: the reasoning's mention of the tags is content
		return text, nil, false
	}
	from := protocol.QwenXML.ContentStart(text)
	head = strings.TrimSuffix(text[:from+strings.Index(text[from:], protocol.ToolCallOpen)], "\n\n")
	for _, c := range parsed {
		calls = append(calls, WrittenCall{Name: c.Name, Args: string(c.Arguments)})
	}
	return head, calls, true
}

// AssistantMessage is the message a client of a serving engine sends back
// for an assistant text: its tool calls split off (see SplitToolCalls),
// each call's arguments a JSON string holding the text the model wrote, as
// the OpenAI API carries them.
func AssistantMessage(text string) tokenizer.Message {
	return AssistantMessageIn(protocol.Hermes, text)
}

// AssistantMessageIn is AssistantMessage for a text written in syntax:
// Qwen3.5's XML calls keep their arguments as the JSON object of the
// parameters' texts (SplitToolCallsIn), which its template takes.
func AssistantMessageIn(syntax protocol.CallSyntax, text string) tokenizer.Message {
	head, calls, ok := SplitToolCallsIn(syntax, text)
	m := tokenizer.Message{Role: "assistant", Content: head}
	if !ok {
		return m
	}
	for _, c := range calls {
		args := json.RawMessage(c.Args)
		if syntax != protocol.QwenXML {
			args, _ = json.Marshal(c.Args)
		}
		m.ToolCalls = append(m.ToolCalls, tokenizer.ToolCall{Name: c.Name, Arguments: args})
	}
	return m
}
