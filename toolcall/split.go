package toolcall

import (
	"encoding/json"
	"strings"
)

// Written is one tool call as the model wrote it: the name and the
// arguments' JSON text unchanged, so that rendering them again gives the
// same tokens.
type Written struct {
	Name string
	Args string
}

// writtenHermes reads the Hermes <tool_call> blocks of content, which
// ParseHermes has accepted, each call's "arguments" as written ({} when
// absent or null).
func writtenHermes(content string) (calls []Written) {
	for rest := content; ; {
		open := strings.Index(rest, ToolCallOpen)
		if open < 0 {
			return calls
		}
		rest = rest[open+len(ToolCallOpen):]
		end := strings.Index(rest, ToolCallClose)
		var body struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		_ = json.Unmarshal([]byte(rest[:end]), &body) // ParseHermes has read it
		args := string(body.Arguments)
		if args == "" || args == "null" {
			args = "{}"
		}
		calls = append(calls, Written{Name: body.Name, Args: args})
		rest = rest[end+len(ToolCallClose):]
	}
}

// Split reads an assistant text written in syntax the way a serving
// engine does: text holding well-formed calls gives them, each as written,
// and head, the text before the first call, without what the chat template
// puts between content and calls; ok is false when the text has no call or
// a malformed one (then it is all content).
//
// In every syntax the calls are read after the reasoning
// (CallSyntax.ContentStart), which may mention the tags, and head is the
// text before the first call, reasoning included. Hermes' <tool_call>
// blocks keep their "arguments" as written, and head loses one newline.
// For Qwen3.5's XML calls each call's Args is the JSON object of its
// parameters' texts (strings, in order; see ParseXML without schemas),
// which the template writes back as they were written, and head loses
// "\n\n". Gemma 4's calls are read the same way, each call's Args the JSON
// object ParseGemma4 reads (the template writes an object's members back
// as format_argument does), and head is whole. Any other syntax is read as
// Hermes blocks.
func Split(syntax CallSyntax, text string) (head string, calls []Written, ok bool) {
	var parsed []Call
	var err error
	switch syntax {
	case QwenXML:
		parsed, err = ParseXML(text, nil)
	case Gemma4:
		parsed, err = ParseGemma4(text)
	default:
		syntax = Hermes
		parsed, err = ParseHermes(text)
	}
	if err != nil || len(parsed) == 0 { // none: the reasoning's mention of the tags is content
		return text, nil, false
	}
	from := syntax.ContentStart(text)
	open, _ := syntax.CallTags()
	first := from + strings.Index(text[from:], open)
	head = text[:first]
	switch syntax {
	case Hermes:
		return strings.TrimSuffix(head, "\n"), writtenHermes(text[first:]), true
	case QwenXML:
		head = strings.TrimSuffix(head, "\n\n")
	}
	for _, c := range parsed {
		calls = append(calls, Written{Name: c.Name, Args: string(c.Arguments)})
	}
	return head, calls, true
}
