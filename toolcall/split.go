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

// splitHermes is Split for Hermes' <tool_call> blocks.
func splitHermes(text string) (head string, calls []Written, ok bool) {
	if !strings.Contains(text, ToolCallOpen) {
		return text, nil, false
	}
	if _, err := ParseHermes(text); err != nil {
		return text, nil, false
	}
	first := strings.Index(text, ToolCallOpen)
	head = strings.TrimSuffix(text[:first], "\n")
	for rest := text[first:]; ; {
		open := strings.Index(rest, ToolCallOpen)
		if open < 0 {
			break
		}
		rest = rest[open+len(ToolCallOpen):]
		end := strings.Index(rest, ToolCallClose)
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
		calls = append(calls, Written{Name: body.Name, Args: args})
		rest = rest[end+len(ToolCallClose):]
	}
	return head, calls, true
}

// Split reads an assistant text written in syntax the way a serving
// engine does: text holding well-formed calls gives them, each as written,
// and head, the text before the first call, without what the chat template
// puts between content and calls; ok is false when the text has no call or
// a malformed one (then it is all content).
//
// Hermes' <tool_call> blocks keep their "arguments" as written, and head
// loses one newline. For Qwen3.5's XML calls each call's Args is the JSON
// object of its parameters' texts (strings, in order; see ParseXML without
// schemas), which the template writes back as they were written, and head
// is the text before the first call (after the reasoning, which may
// mention the tags) less "\n\n". Gemma 4's calls are read the same way,
// each call's Args the JSON object ParseGemma4 reads (the template writes
// an object's members back as format_argument does), and head is the text
// before the first call (after the thought channel), whole. Any other
// syntax is read as Hermes blocks.
func Split(syntax CallSyntax, text string) (head string, calls []Written, ok bool) {
	var parsed []Call
	var err error
	switch syntax {
	case QwenXML:
		parsed, err = ParseXML(text, nil)
	case Gemma4:
		parsed, err = ParseGemma4(text)
	default:
		return splitHermes(text)
	}
	if err != nil || len(parsed) == 0 { // none: the reasoning's mention of the tags is content
		return text, nil, false
	}
	from := syntax.ContentStart(text)
	open, _ := syntax.CallTags()
	head = text[:from+strings.Index(text[from:], open)]
	if syntax == QwenXML {
		head = strings.TrimSuffix(head, "\n\n")
	}
	for _, c := range parsed {
		calls = append(calls, Written{Name: c.Name, Args: string(c.Arguments)})
	}
	return head, calls, true
}
