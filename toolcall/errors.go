package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// ParseErrorKind classifies why a turn's tool calls could not be parsed.
type ParseErrorKind string

// The kinds of tool-call parse errors.
const (
	KindMalformedJSON ParseErrorKind = "malformed_json" // the block is not one JSON object
	KindMalformedXML  ParseErrorKind = "malformed_xml"  // Qwen3.5: the block is not <function=NAME> with <parameter=KEY> blocks
	KindMalformedCall ParseErrorKind = "malformed_call" // Gemma 4: the block is not call:NAME{ARGUMENTS}
	KindMissingName   ParseErrorKind = "missing_name"   // "name" absent, empty or not a string
	KindBadArguments  ParseErrorKind = "bad_arguments"  // "arguments" (Llama 3: "parameters") present but not an object; Llama 3: "arguments" at all
	KindUnclosedTag   ParseErrorKind = "unclosed_tag"   // <tool_call> without its </tool_call>
	KindUnopenedTag   ParseErrorKind = "unopened_tag"   // </tool_call> without a <tool_call> before it
	KindTrailingText  ParseErrorKind = "trailing_text"  // text after a call other than another call (Hermes) or a final end of turn
)

// ParseError says what is wrong with the tool calls of a turn. Its message
// quotes the offending part (truncated) and is meant to be shown to the
// model as an error observation.
type ParseError struct {
	Kind ParseErrorKind
	Call int // 1-based index of the tool call concerned, 0 when none
	Msg  string
}

// Error returns the message.
func (e *ParseError) Error() string { return e.Msg }

// quoteLimit is how many characters of an offending text a message quotes.
const quoteLimit = 80

// Quote shows s to the model in an error message (a parse error here, a
// call's arguments refused by its tool's schema in envs): at most
// quoteLimit characters between backquotes, "..." marking a cut, control
// characters escaped (\n, \t, \x01) so the message stays on one line, and
// JSON quotes left alone.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('`')
	n := 0
	for _, r := range s {
		if n == quoteLimit {
			b.WriteString("`...")
			return b.String()
		}
		n++
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	b.WriteByte('`')
	return b.String()
}

// DecodeJSON decodes one JSON value as a call's arguments are read: numbers
// kept as json.Number, trailing data refused (quoted in the error).
func DecodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if rest := bytes.TrimSpace(raw[dec.InputOffset():]); len(rest) > 0 {
		return nil, fmt.Errorf("unexpected data after the JSON value: %s", Quote(string(rest)))
	}
	return v, nil
}
