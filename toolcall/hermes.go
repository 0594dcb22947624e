package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Call is one parsed call: the tool's name and its arguments, a JSON
// object (compacted).
type Call struct {
	Name      string
	Arguments json.RawMessage
}

// ParseHermes extracts the tool calls of an assistant turn in the
// Qwen/Hermes format:
//
//	<tool_call>
//	{"name": "search", "arguments": {"query": "..."}}
//	</tool_call>
//
// The reasoning, up to the last </think>, is split off first
// (CallSyntax.ContentStart), so that reasoning that mentions the tags is
// not read as a call. In the content a turn may hold zero, one or several
// blocks. Any text may precede the first block; between blocks only
// whitespace is allowed, and after the last only whitespace and one
// <|im_end|>. Absent or null arguments mean {}. Every problem is a
// *ParseError with its Kind; the calls are returned only when there is
// none.
func ParseHermes(text string) ([]Call, error) {
	return parseBlocks(text[Hermes.ContentStart(text):], parseCallBody)
}

// parseBlocks finds the <tool_call> blocks of text, as ParseHermes
// describes, and reads the n-th block's body with body.
func parseBlocks(text string, body func(body string, n int) (Call, error)) ([]Call, error) {
	first := strings.Index(text, ToolCallOpen)
	head := text
	if first >= 0 {
		head = text[:first]
	}
	if i := strings.Index(head, ToolCallClose); i >= 0 {
		return nil, &ParseError{Kind: KindUnopenedTag,
			Msg: fmt.Sprintf("found %s without a %s before it: %s", ToolCallClose, ToolCallOpen, Quote(text[i:]))}
	}
	if first < 0 {
		return nil, nil
	}
	var calls []Call
	for pos := first; ; {
		n := len(calls) + 1
		start := pos + len(ToolCallOpen)
		end := strings.Index(text[start:], ToolCallClose)
		if next := strings.Index(text[start:], ToolCallOpen); end < 0 || next >= 0 && next < end {
			return nil, &ParseError{Kind: KindUnclosedTag, Call: n,
				Msg: fmt.Sprintf("tool call %d has no closing %s: %s", n, ToolCallClose, Quote(text[pos:]))}
		}
		call, err := body(text[start:start+end], n)
		if err != nil {
			return nil, err
		}
		calls = append(calls, call)
		pos = start + end + len(ToolCallClose)
		next := strings.Index(text[pos:], ToolCallOpen)
		if next < 0 {
			if rest := strings.TrimSpace(text[pos:]); rest != "" && strings.TrimSpace(strings.TrimPrefix(rest, TurnEnd)) != "" {
				return nil, &ParseError{Kind: KindTrailingText, Call: n,
					Msg: fmt.Sprintf("unexpected text after tool call %d (end the turn after %s): %s", n, ToolCallClose, Quote(rest))}
			}
			return calls, nil
		}
		if gap := strings.TrimSpace(text[pos : pos+next]); gap != "" {
			return nil, &ParseError{Kind: KindTrailingText, Call: n,
				Msg: fmt.Sprintf("unexpected text between tool calls %d and %d: %s", n, n+1, Quote(gap))}
		}
		pos += next
	}
}

// parseCallBody parses the JSON between the tags of the n-th call.
func parseCallBody(body string, n int) (Call, error) {
	body = strings.TrimSpace(body)
	if body == "" {
		return Call{}, &ParseError{Kind: KindMalformedJSON, Call: n,
			Msg: fmt.Sprintf("tool call %d is empty: expected {\"name\": ..., \"arguments\": {...}}", n)}
	}
	var obj map[string]json.RawMessage
	if _, err := DecodeJSON([]byte(body)); err != nil {
		return Call{}, &ParseError{Kind: KindMalformedJSON, Call: n,
			Msg: fmt.Sprintf("tool call %d is not valid JSON (%v): %s", n, err, Quote(body))}
	}
	if err := json.Unmarshal([]byte(body), &obj); err != nil || obj == nil {
		return Call{}, &ParseError{Kind: KindMalformedJSON, Call: n,
			Msg: fmt.Sprintf("tool call %d must be a JSON object {\"name\": ..., \"arguments\": {...}}, got %s", n, Quote(body))}
	}
	rawName, ok := obj["name"]
	if !ok {
		return Call{}, &ParseError{Kind: KindMissingName, Call: n,
			Msg: fmt.Sprintf("tool call %d has no \"name\": %s", n, Quote(body))}
	}
	var name string
	if err := json.Unmarshal(rawName, &name); err != nil || strings.TrimSpace(name) == "" {
		return Call{}, &ParseError{Kind: KindMissingName, Call: n,
			Msg: fmt.Sprintf("tool call %d: \"name\" must be a non-empty string, got %s", n, Quote(string(rawName)))}
	}
	args := json.RawMessage("{}")
	if raw, ok := obj["arguments"]; ok && string(raw) != "null" {
		if raw[0] != '{' {
			return Call{}, &ParseError{Kind: KindBadArguments, Call: n,
				Msg: fmt.Sprintf("tool call %d (%s): \"arguments\" must be a JSON object, got %s", n, name, Quote(string(raw)))}
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return Call{}, &ParseError{Kind: KindBadArguments, Call: n,
				Msg: fmt.Sprintf("tool call %d (%s): \"arguments\" are not valid JSON (%v)", n, name, err)}
		}
		args = buf.Bytes()
	}
	return Call{Name: name, Arguments: args}, nil
}

// ParseAnswer returns the text of the last complete <answer>...</answer>
// block of text, trimmed of surrounding whitespace, and whether there is
// one.
func ParseAnswer(text string) (answer string, ok bool) {
	end := strings.LastIndex(text, AnswerClose)
	if end < 0 {
		return "", false
	}
	start := strings.LastIndex(text[:end], AnswerOpen)
	if start < 0 {
		return "", false
	}
	return strings.TrimSpace(text[start+len(AnswerOpen) : end]), true
}
