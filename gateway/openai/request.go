package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Request is a checked chat completion request. Fields the gateway does not
// know are ignored, as OpenAI ignores them; every known field is checked
// for its type and range.
type Request struct {
	Model    string
	Messages []Message
	// Tools are the tool objects as sent ({"type": "function",
	// "function": {...}}), for the chat template to render.
	Tools []json.RawMessage
	// ToolChoice is "auto" (the default) or "none" (the output is never
	// read as tool calls).
	ToolChoice  string
	Temperature float64 // default 1
	TopP        float64 // default 1
	// MaxTokens is max_completion_tokens, or else max_tokens; 0 when
	// neither is given (the rest of the context window).
	MaxTokens    int
	Stop         []string
	Seed         *int64
	N            int // default 1
	Logprobs     bool
	TopLogprobs  int
	Stream       bool
	IncludeUsage bool // stream_options.include_usage
}

// ParseRequest decodes and checks a request body. A malformed body, a
// field of the wrong type or out of range, and messages the chat template
// cannot lay out are each a 400 naming the field. More than maxMessages
// messages (every message takes at least one token of the context window)
// are refused as context_length_exceeded before any is decoded.
func ParseRequest(body []byte, maxMessages int) (*Request, *Error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		msg := "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"
		if err != nil {
			msg += " " + err.Error()
		}
		return nil, BadRequest("", "invalid_json", "%s", msg)
	}
	r := &Request{ToolChoice: "auto", Temperature: 1, TopP: 1, N: 1}
	var e *Error
	get := func(name string) (json.RawMessage, bool) {
		raw, ok := fields[name]
		if !ok || isNull(raw) {
			return nil, false
		}
		return raw, true
	}
	raw, ok := get("model")
	if !ok {
		return nil, BadRequest("model", "missing_required_parameter", "you must provide a model parameter")
	}
	if r.Model, e = str(raw, "model"); e != nil {
		return nil, e
	}
	raw, ok = get("messages")
	if !ok {
		return nil, BadRequest("messages", "missing_required_parameter", "Missing required parameter: 'messages'.")
	}
	if r.Messages, e = messages(raw, maxMessages); e != nil {
		return nil, e
	}
	if raw, ok = get("tools"); ok {
		if r.Tools, e = tools(raw); e != nil {
			return nil, e
		}
	}
	if raw, ok = get("tool_choice"); ok {
		s, e := str(raw, "tool_choice")
		if e != nil {
			return nil, BadRequest("tool_choice", "unsupported_value", "Invalid value for 'tool_choice': this server supports \"auto\" and \"none\".")
		}
		if s != "auto" && s != "none" {
			return nil, BadRequest("tool_choice", "unsupported_value", "Invalid value for 'tool_choice': %q; this server supports \"auto\" and \"none\".", s)
		}
		r.ToolChoice = s
	}
	if raw, ok = get("temperature"); ok {
		if r.Temperature, e = number(raw, "temperature", 0, 2); e != nil {
			return nil, e
		}
	}
	if raw, ok = get("top_p"); ok {
		if r.TopP, e = number(raw, "top_p", 0, 1); e != nil {
			return nil, e
		}
		if r.TopP == 0 {
			return nil, BadRequest("top_p", "invalid_value", "Invalid 'top_p': expected a number greater than 0 and at most 1, got 0.")
		}
	}
	for _, name := range []string{"max_tokens", "max_completion_tokens"} {
		if raw, ok = get(name); ok {
			if r.MaxTokens, e = integer(raw, name, 1, math.MaxInt32); e != nil {
				return nil, e
			}
		}
	}
	if raw, ok = get("stop"); ok {
		if r.Stop, e = stops(raw); e != nil {
			return nil, e
		}
	}
	if raw, ok = get("seed"); ok {
		s, e := integer(raw, "seed", math.MinInt64, math.MaxInt64)
		if e != nil {
			return nil, e
		}
		seed := int64(s)
		r.Seed = &seed
	}
	if raw, ok = get("n"); ok {
		if r.N, e = integer(raw, "n", 1, 128); e != nil {
			return nil, e
		}
	}
	if raw, ok = get("logprobs"); ok {
		if r.Logprobs, e = boolean(raw, "logprobs"); e != nil {
			return nil, e
		}
	}
	if raw, ok = get("top_logprobs"); ok {
		if r.TopLogprobs, e = integer(raw, "top_logprobs", 0, 20); e != nil {
			return nil, e
		}
		if !r.Logprobs {
			return nil, BadRequest("top_logprobs", "invalid_value", "Invalid 'top_logprobs': 'logprobs' must be set to true when 'top_logprobs' is given.")
		}
	}
	if raw, ok = get("stream"); ok {
		if r.Stream, e = boolean(raw, "stream"); e != nil {
			return nil, e
		}
	}
	if raw, ok = get("stream_options"); ok {
		var so map[string]json.RawMessage
		if json.Unmarshal(raw, &so) != nil || so == nil {
			return nil, BadRequest("stream_options", "invalid_type", "Invalid type for 'stream_options': expected an object, but got %s instead.", kind(raw))
		}
		if !r.Stream {
			return nil, BadRequest("stream_options", "invalid_value", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
		}
		if v, ok := so["include_usage"]; ok && !isNull(v) {
			if r.IncludeUsage, e = boolean(v, "stream_options.include_usage"); e != nil {
				return nil, e
			}
		}
	}
	return r, nil
}

// messages decodes and checks the conversation: roles, contents (a string
// or text parts), the assistant's tool calls and the tool messages' ids,
// each of which must answer a call of the assistant message before it.
func messages(raw json.RawMessage, maxMessages int) ([]Message, *Error) {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, BadRequest("messages", "invalid_type", "Invalid type for 'messages': expected an array, but got %s instead.", kind(raw))
	}
	if len(items) == 0 {
		return nil, BadRequest("messages", "empty_array", "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	if len(items) > maxMessages {
		return nil, BadRequest("messages", "context_length_exceeded", "This model's maximum context length is %d tokens. However, you sent %d messages, each at least one token. Please reduce the number of messages.", maxMessages, len(items))
	}
	out := make([]Message, len(items))
	calls := map[string]bool{} // ids of the calls the latest assistant message made
	for i, item := range items {
		p := fmt.Sprintf("messages[%d]", i)
		var f map[string]json.RawMessage
		if json.Unmarshal(item, &f) != nil || f == nil {
			return nil, BadRequest(p, "invalid_type", "Invalid type for '%s': expected an object, but got %s instead.", p, kind(item))
		}
		m := &out[i]
		rawRole, ok := f["role"]
		if !ok || isNull(rawRole) {
			return nil, BadRequest(p+".role", "missing_required_parameter", "Missing required parameter: '%s.role'.", p)
		}
		role, e := str(rawRole, p+".role")
		if e != nil {
			return nil, e
		}
		switch role {
		case "developer":
			role = "system"
		case "system", "user", "assistant", "tool":
		default:
			return nil, BadRequest(p+".role", "invalid_value", "Invalid value: '%s'. Supported values are: 'system', 'developer', 'user', 'assistant' and 'tool'.", role)
		}
		m.Role = role
		if c, ok := f["content"]; ok && !isNull(c) {
			text, e := content(c, p+".content")
			if e != nil {
				return nil, e
			}
			m.Content = &text
		}
		if n, ok := f["name"]; ok && !isNull(n) {
			if m.Name, e = str(n, p+".name"); e != nil {
				return nil, e
			}
		}
		switch role {
		case "assistant":
			if tc, ok := f["tool_calls"]; ok && !isNull(tc) {
				if m.ToolCalls, e = toolCalls(tc, p+".tool_calls"); e != nil {
					return nil, e
				}
			}
			if m.Content == nil && len(m.ToolCalls) == 0 {
				return nil, BadRequest(p+".content", "missing_required_parameter", "Invalid '%s': an assistant message needs 'content' or 'tool_calls'.", p)
			}
			calls = map[string]bool{}
			for _, c := range m.ToolCalls {
				calls[c.ID] = true
			}
		case "tool":
			id, ok := f["tool_call_id"]
			if !ok || isNull(id) {
				return nil, BadRequest(p+".tool_call_id", "missing_required_parameter", "Missing required parameter: '%s.tool_call_id'.", p)
			}
			if m.ToolCallID, e = str(id, p+".tool_call_id"); e != nil {
				return nil, e
			}
			if !calls[m.ToolCallID] {
				return nil, BadRequest(p+".role", "invalid_value", "Invalid parameter: messages with role 'tool' must be a response to a preceding message with 'tool_calls' (no call has id %q).", m.ToolCallID)
			}
			fallthrough
		default:
			if m.Content == nil {
				return nil, BadRequest(p+".content", "missing_required_parameter", "Missing required parameter: '%s.content'.", p)
			}
		}
	}
	return out, nil
}

// content is a message's text: a string, or an array of text parts
// joined together.
func content(raw json.RawMessage, p string) (string, *Error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []map[string]json.RawMessage
	if json.Unmarshal(raw, &parts) != nil {
		return "", BadRequest(p, "invalid_type", "Invalid type for '%s': expected one of a string or array of objects, but got %s instead.", p, kind(raw))
	}
	var b strings.Builder
	for j, part := range parts {
		pp := fmt.Sprintf("%s[%d]", p, j)
		t, e := str(part["type"], pp+".type")
		if e != nil {
			return "", e
		}
		if t != "text" {
			return "", BadRequest(pp+".type", "invalid_value", "Invalid value: '%s'. This server supports only 'text' content parts.", t)
		}
		text, e := str(part["text"], pp+".text")
		if e != nil {
			return "", e
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

// toolCalls decodes an assistant message's calls; the arguments must be a
// JSON text of an object (the string the API carries).
func toolCalls(raw json.RawMessage, p string) ([]ToolCall, *Error) {
	var items []map[string]json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, BadRequest(p, "invalid_type", "Invalid type for '%s': expected an array of objects, but got %s instead.", p, kind(raw))
	}
	out := make([]ToolCall, len(items))
	for j, it := range items {
		pp := fmt.Sprintf("%s[%d]", p, j)
		var e *Error
		if out[j].ID, e = str(it["id"], pp+".id"); e != nil {
			return nil, e
		}
		out[j].Type = "function"
		var fn map[string]json.RawMessage
		if json.Unmarshal(it["function"], &fn) != nil || fn == nil {
			return nil, BadRequest(pp+".function", "invalid_type", "Invalid type for '%s.function': expected an object, but got %s instead.", pp, kind(it["function"]))
		}
		if out[j].Function.Name, e = str(fn["name"], pp+".function.name"); e != nil {
			return nil, e
		}
		if out[j].Function.Arguments, e = str(fn["arguments"], pp+".function.arguments"); e != nil {
			return nil, e
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(out[j].Function.Arguments), &obj) != nil || obj == nil {
			return nil, BadRequest(pp+".function.arguments", "invalid_value", "Invalid '%s.function.arguments': expected the JSON text of an object, got %q.", pp, out[j].Function.Arguments)
		}
	}
	return out, nil
}

// tools checks the tool objects: type "function" and a function with a
// name.
func tools(raw json.RawMessage) ([]json.RawMessage, *Error) {
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, BadRequest("tools", "invalid_type", "Invalid type for 'tools': expected an array, but got %s instead.", kind(raw))
	}
	for j, it := range items {
		p := fmt.Sprintf("tools[%d]", j)
		var f map[string]json.RawMessage
		if json.Unmarshal(it, &f) != nil || f == nil {
			return nil, BadRequest(p, "invalid_type", "Invalid type for '%s': expected an object, but got %s instead.", p, kind(it))
		}
		t, e := str(f["type"], p+".type")
		if e != nil {
			return nil, e
		}
		if t != "function" {
			return nil, BadRequest(p+".type", "invalid_value", "Invalid value: '%s'. Supported values are: 'function'.", t)
		}
		var fn map[string]json.RawMessage
		if json.Unmarshal(f["function"], &fn) != nil || fn == nil {
			return nil, BadRequest(p+".function", "invalid_type", "Invalid type for '%s.function': expected an object, but got %s instead.", p, kind(f["function"]))
		}
		if _, e := str(fn["name"], p+".function.name"); e != nil {
			return nil, e
		}
		if d, ok := fn["parameters"]; ok && !isNull(d) {
			var obj map[string]json.RawMessage
			if json.Unmarshal(d, &obj) != nil || obj == nil {
				return nil, BadRequest(p+".function.parameters", "invalid_type", "Invalid type for '%s.function.parameters': expected an object, but got %s instead.", p, kind(d))
			}
		}
	}
	return items, nil
}

// stops is a string or an array of at most 4 non-empty strings.
func stops(raw json.RawMessage) ([]string, *Error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "" {
			return nil, nil
		}
		return []string{s}, nil
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil {
		return nil, BadRequest("stop", "invalid_type", "Invalid type for 'stop': expected one of a string or array of strings, but got %s instead.", kind(raw))
	}
	if len(list) > 4 {
		return nil, BadRequest("stop", "array_above_max_length", "Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array with length %d instead.", len(list))
	}
	var out []string
	for _, s := range list {
		if s != "" {
			out = append(out, s)
		}
	}
	return out, nil
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// kind names the JSON type of raw as OpenAI's messages do.
func kind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func str(raw json.RawMessage, p string) (string, *Error) {
	var s string
	if raw == nil || json.Unmarshal(raw, &s) != nil {
		if raw == nil {
			return "", BadRequest(p, "missing_required_parameter", "Missing required parameter: '%s'.", p)
		}
		return "", BadRequest(p, "invalid_type", "Invalid type for '%s': expected a string, but got %s instead.", p, kind(raw))
	}
	return s, nil
}

func boolean(raw json.RawMessage, p string) (bool, *Error) {
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		return false, BadRequest(p, "invalid_type", "Invalid type for '%s': expected a boolean, but got %s instead.", p, kind(raw))
	}
	return b, nil
}

func number(raw json.RawMessage, p string, lo, hi float64) (float64, *Error) {
	var v float64
	if json.Unmarshal(raw, &v) != nil {
		return 0, BadRequest(p, "invalid_type", "Invalid type for '%s': expected a decimal, but got %s instead.", p, kind(raw))
	}
	if v < lo || v > hi {
		return 0, BadRequest(p, "decimal_out_of_range", "Invalid '%s': decimal %g out of range. Expected a value between %g and %g.", p, v, lo, hi)
	}
	return v, nil
}

func integer(raw json.RawMessage, p string, lo, hi int64) (int, *Error) {
	var v int64
	if json.Unmarshal(raw, &v) != nil {
		return 0, BadRequest(p, "invalid_type", "Invalid type for '%s': expected an integer, but got %s instead.", p, kind(raw))
	}
	if v < lo || v > hi {
		return 0, BadRequest(p, "integer_out_of_range", "Invalid '%s': integer %d out of range. Expected a value between %d and %d.", p, v, lo, hi)
	}
	return int(v), nil
}
