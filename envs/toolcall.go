package envs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/agent/protocol"
)

// The Qwen/Hermes tool-call and answer tags.
const (
	TagToolCallOpen  = protocol.ToolCallOpen
	TagToolCallClose = protocol.ToolCallClose
	TagAnswerOpen    = protocol.AnswerOpen
	TagAnswerClose   = protocol.AnswerClose
	TagEndOfTurn     = protocol.TurnEnd
)

// ToolCall is one parsed call: the tool's name and its arguments, a JSON
// object (compacted).
type ToolCall struct {
	Name      string
	Arguments json.RawMessage
}

// ParseToolCalls extracts the tool calls of an assistant turn in the
// Qwen/Hermes format:
//
//	<tool_call>
//	{"name": "search", "arguments": {"query": "..."}}
//	</tool_call>
//
// A turn may hold zero, one or several blocks. Any text may precede the
// first block (thinking); between blocks only whitespace is allowed, and
// after the last only whitespace and one <|im_end|>. Absent or null
// arguments mean {}. Every problem is a *ParseError with its Kind; the
// calls are returned only when there is none.
func ParseToolCalls(text string) ([]ToolCall, error) { return parseBlocks(text, parseCallBody) }

// parseBlocks finds the <tool_call> blocks of text, as ParseToolCalls
// describes, and reads the n-th block's body with body.
func parseBlocks(text string, body func(body string, n int) (ToolCall, error)) ([]ToolCall, error) {
	first := strings.Index(text, TagToolCallOpen)
	head := text
	if first >= 0 {
		head = text[:first]
	}
	if i := strings.Index(head, TagToolCallClose); i >= 0 {
		return nil, &ParseError{Kind: KindUnopenedTag,
			Msg: fmt.Sprintf("found %s without a %s before it: %s", TagToolCallClose, TagToolCallOpen, quote(text[i:]))}
	}
	if first < 0 {
		return nil, nil
	}
	var calls []ToolCall
	for pos := first; ; {
		n := len(calls) + 1
		start := pos + len(TagToolCallOpen)
		end := strings.Index(text[start:], TagToolCallClose)
		if next := strings.Index(text[start:], TagToolCallOpen); end < 0 || next >= 0 && next < end {
			return nil, &ParseError{Kind: KindUnclosedTag, Call: n,
				Msg: fmt.Sprintf("tool call %d has no closing %s: %s", n, TagToolCallClose, quote(text[pos:]))}
		}
		call, err := body(text[start:start+end], n)
		if err != nil {
			return nil, err
		}
		calls = append(calls, call)
		pos = start + end + len(TagToolCallClose)
		next := strings.Index(text[pos:], TagToolCallOpen)
		if next < 0 {
			if rest := strings.TrimSpace(text[pos:]); rest != "" && strings.TrimSpace(strings.TrimPrefix(rest, TagEndOfTurn)) != "" {
				return nil, &ParseError{Kind: KindTrailingText, Call: n,
					Msg: fmt.Sprintf("unexpected text after tool call %d (end the turn after %s): %s", n, TagToolCallClose, quote(rest))}
			}
			return calls, nil
		}
		if gap := strings.TrimSpace(text[pos : pos+next]); gap != "" {
			return nil, &ParseError{Kind: KindTrailingText, Call: n,
				Msg: fmt.Sprintf("unexpected text between tool calls %d and %d: %s", n, n+1, quote(gap))}
		}
		pos += next
	}
}

// parseCallBody parses the JSON between the tags of the n-th call.
func parseCallBody(body string, n int) (ToolCall, error) {
	body = strings.TrimSpace(body)
	if body == "" {
		return ToolCall{}, &ParseError{Kind: KindMalformedJSON, Call: n,
			Msg: fmt.Sprintf("tool call %d is empty: expected {\"name\": ..., \"arguments\": {...}}", n)}
	}
	var obj map[string]json.RawMessage
	if _, err := decodeJSON([]byte(body)); err != nil {
		return ToolCall{}, &ParseError{Kind: KindMalformedJSON, Call: n,
			Msg: fmt.Sprintf("tool call %d is not valid JSON (%v): %s", n, err, quote(body))}
	}
	if err := json.Unmarshal([]byte(body), &obj); err != nil || obj == nil {
		return ToolCall{}, &ParseError{Kind: KindMalformedJSON, Call: n,
			Msg: fmt.Sprintf("tool call %d must be a JSON object {\"name\": ..., \"arguments\": {...}}, got %s", n, quote(body))}
	}
	rawName, ok := obj["name"]
	if !ok {
		return ToolCall{}, &ParseError{Kind: KindMissingName, Call: n,
			Msg: fmt.Sprintf("tool call %d has no \"name\": %s", n, quote(body))}
	}
	var name string
	if err := json.Unmarshal(rawName, &name); err != nil || strings.TrimSpace(name) == "" {
		return ToolCall{}, &ParseError{Kind: KindMissingName, Call: n,
			Msg: fmt.Sprintf("tool call %d: \"name\" must be a non-empty string, got %s", n, quote(string(rawName)))}
	}
	args := json.RawMessage("{}")
	if raw, ok := obj["arguments"]; ok && string(raw) != "null" {
		if raw[0] != '{' {
			return ToolCall{}, &ParseError{Kind: KindBadArguments, Call: n,
				Msg: fmt.Sprintf("tool call %d (%s): \"arguments\" must be a JSON object, got %s", n, name, quote(string(raw)))}
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return ToolCall{}, &ParseError{Kind: KindBadArguments, Call: n,
				Msg: fmt.Sprintf("tool call %d (%s): \"arguments\" are not valid JSON (%v)", n, name, err)}
		}
		args = buf.Bytes()
	}
	return ToolCall{Name: name, Arguments: args}, nil
}

// ParseAnswer returns the text of the last complete <answer>...</answer>
// block of text, trimmed of surrounding whitespace, and whether there is
// one.
func ParseAnswer(text string) (answer string, ok bool) {
	end := strings.LastIndex(text, TagAnswerClose)
	if end < 0 {
		return "", false
	}
	start := strings.LastIndex(text[:end], TagAnswerOpen)
	if start < 0 {
		return "", false
	}
	return strings.TrimSpace(text[start+len(TagAnswerOpen) : end]), true
}
