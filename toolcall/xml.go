package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// ParamSchemas are tools' parameter schemas (Tool.Parameters, or the
// "parameters" of an OpenAI request's functions) by tool name. The XML
// syntax writes every value as text; a parameter's declared type says
// what the text stands for (see ParseXML).
type ParamSchemas map[string]json.RawMessage

// ParseXML extracts the tool calls of an assistant turn in
// Qwen3.5's XML syntax (QwenXML):
//
//	<tool_call>
//	<function=search>
//	<parameter=query>
//	Kamo river
//	</parameter>
//	</function>
//	</tool_call>
//
// The reasoning, up to the last </think>, is split off first
// (CallSyntax.ContentStart), so that reasoning that mentions the
// tags is not read as a call. In the content the blocks are found as
// ParseHermes finds Hermes blocks: any text before the first, only
// white space between them, and after the last only white space and one
// <|im_end|>. In a block, white space may
// surround the tags; a value is the text between <parameter=KEY> and its
// </parameter>, less the one newline the template writes at each end; a
// </parameter> ends the value only where white space and then another
// <parameter= or the end of the function follow it, so a value may spell
// the closing tag. A parameter given twice is an error.
//
// The arguments are a JSON object with the parameters in the order
// written, each typed by the parameter's type in the tool's schema (the
// first type other than "null" of a list or an anyOf): "integer" and
// "number" a JSON number when the text is one, "boolean" true or false
// for "true" or "false" in any case ("True" is how the template prints
// Python's True), "object" and "array" the JSON value of that kind the
// text holds, and for any of these "null" or "None" is null. Anything
// else, a text that is not of its type included, stays the text, a JSON
// string, for the tool's schema to refuse; with no schema for the tool
// (nil schemas) every value is its text. Every problem is a *ParseError
// with its Kind; the calls are returned only when there is none.
func ParseXML(text string, schemas ParamSchemas) ([]Call, error) {
	content := text[QwenXML.ContentStart(text):]
	return parseBlocks(content, func(body string, n int) (Call, error) { return parseXMLBody(body, n, schemas) })
}

// parseXMLBody parses the text between the tags of the n-th call.
func parseXMLBody(body string, n int, schemas ParamSchemas) (Call, error) {
	malformed := func(format string, a ...any) (Call, error) {
		return Call{}, &ParseError{Kind: KindMalformedXML, Call: n, Msg: fmt.Sprintf("tool call %d ", n) + fmt.Sprintf(format, a...)}
	}
	rest := strings.TrimSpace(body)
	if rest == "" {
		return malformed("is empty: expected %sNAME>, its parameters and %s", FunctionOpen, FunctionClose)
	}
	if !strings.HasPrefix(rest, FunctionOpen) {
		return malformed("must start with %sNAME>: %s", FunctionOpen, Quote(rest))
	}
	rest = rest[len(FunctionOpen):]
	gt := strings.Index(rest, ">")
	if gt < 0 {
		return malformed("has no \">\" after %s: %s", FunctionOpen, Quote(body))
	}
	name := rest[:gt]
	if !validXMLName(name) {
		return Call{}, &ParseError{Kind: KindMissingName, Call: n,
			Msg: fmt.Sprintf("tool call %d: the function name must be a non-empty name without spaces or tags, got %q", n, name)}
	}
	rest, ok := strings.CutSuffix(rest[gt+1:], FunctionClose)
	if !ok {
		return malformed("(%s) has no %s before %s: %s", name, FunctionClose, ToolCallClose, Quote(body))
	}
	var params []XMLParam
	seen := map[string]bool{}
	for {
		rest = strings.TrimLeft(rest, " \t\r\n")
		if rest == "" {
			break
		}
		if !strings.HasPrefix(rest, ParameterOpen) {
			return malformed("(%s): expected %sKEY> or %s, got %s", name, ParameterOpen, FunctionClose, Quote(rest))
		}
		rest = rest[len(ParameterOpen):]
		gt := strings.Index(rest, ">")
		if gt < 0 {
			return malformed("(%s) has no \">\" after %s: %s", name, ParameterOpen, Quote(rest))
		}
		key := rest[:gt]
		if !validXMLName(key) {
			return Call{}, &ParseError{Kind: KindBadArguments, Call: n,
				Msg: fmt.Sprintf("tool call %d (%s): a parameter name must be non-empty, without spaces or tags, got %q", n, name, key)}
		}
		if seen[key] {
			return Call{}, &ParseError{Kind: KindBadArguments, Call: n,
				Msg: fmt.Sprintf("tool call %d (%s): parameter %q is given twice", n, name, key)}
		}
		seen[key] = true
		rest = rest[gt+1:]
		end := valueEnd(rest)
		if end < 0 {
			return malformed("(%s): parameter %q has no %s", name, key, ParameterClose)
		}
		value := strings.TrimPrefix(rest[:end], "\n")
		value = strings.TrimSuffix(value, "\n")
		params = append(params, XMLParam{Key: key, Value: value})
		rest = rest[end+len(ParameterClose):]
	}
	args, err := xmlArguments(params, schemas[name])
	if err != nil {
		return Call{}, &ParseError{Kind: KindBadArguments, Call: n, Msg: fmt.Sprintf("tool call %d (%s): %v", n, name, err)}
	}
	return Call{Name: name, Arguments: args}, nil
}

// validXMLName reports whether s can be a function or parameter name: not
// empty, no white space, no tag characters, no quotes.
func validXMLName(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\r\n<>\"'{}")
}

// valueEnd is the offset in s (the text after <parameter=KEY>) of the
// </parameter> that ends the value: the first one followed, after white
// space, by the end of s or another <parameter=; -1 when there is none.
func valueEnd(s string) int {
	for from := 0; ; {
		i := strings.Index(s[from:], ParameterClose)
		if i < 0 {
			return -1
		}
		i += from
		after := strings.TrimLeft(s[i+len(ParameterClose):], " \t\r\n")
		if after == "" || strings.HasPrefix(after, ParameterOpen) {
			return i
		}
		from = i + len(ParameterClose)
	}
}

// xmlArguments is the JSON object of the parameters, in order, each value
// typed by schema (see ParseXML).
func xmlArguments(params []XMLParam, schema json.RawMessage) (json.RawMessage, error) {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(schema) > 0 {
		_ = json.Unmarshal(schema, &s) // a tool's schema was checked when it was made
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range params {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSONString(&b, p.Key)
		b.WriteByte(':')
		v, err := xmlValue(p.Value, declaredType(s.Properties[p.Key]))
		if err != nil {
			return nil, fmt.Errorf("parameter %q: %w", p.Key, err)
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// declaredType is a parameter schema's type: "type", or the first type
// other than "null" of a list of types or of an anyOf ("" when none).
func declaredType(schema json.RawMessage) string {
	var s struct {
		Type  json.RawMessage   `json:"type"`
		AnyOf []json.RawMessage `json:"anyOf"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return ""
	}
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		return one
	}
	var list []string
	if json.Unmarshal(s.Type, &list) == nil {
		for _, t := range list {
			if t != "null" {
				return t
			}
		}
	}
	for _, option := range s.AnyOf {
		if t := declaredType(option); t != "" && t != "null" {
			return t
		}
	}
	return ""
}

// jsonInteger and jsonNumber are JSON's number grammar, integers without
// a fraction or exponent.
var (
	jsonInteger = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
	jsonNumber  = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)
)

// xmlValue is the JSON value of a parameter's text for its declared type.
func xmlValue(text, typ string) (json.RawMessage, error) {
	if typ != "" && typ != "string" && (text == "null" || text == "None") {
		return json.RawMessage("null"), nil
	}
	switch typ {
	case "integer":
		if jsonInteger.MatchString(text) {
			return json.RawMessage(text), nil
		}
	case "number":
		if jsonNumber.MatchString(text) {
			return json.RawMessage(text), nil
		}
	case "boolean":
		switch strings.ToLower(text) {
		case "true":
			return json.RawMessage("true"), nil
		case "false":
			return json.RawMessage("false"), nil
		}
	case "object", "array":
		open := map[string]byte{"object": '{', "array": '['}[typ]
		if t := bytes.TrimSpace([]byte(text)); len(t) > 0 && t[0] == open && json.Valid(t) {
			var b bytes.Buffer
			if err := json.Compact(&b, t); err != nil {
				return nil, err
			}
			return b.Bytes(), nil
		}
	}
	var b bytes.Buffer
	writeJSONString(&b, text)
	return b.Bytes(), nil
}

// writeJSONString writes s as a JSON string, without escaping <, > and &
// (json.Marshal's HTML escaping would not read back as the text written).
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)       // a string always encodes
	b.Truncate(b.Len() - 1) // Encode's newline
}
