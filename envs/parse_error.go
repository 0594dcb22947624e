package envs

import (
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

// quote shows s to the model: at most quoteLimit characters between
// backquotes, "..." marking a cut, control characters escaped (\n, \t,
// \x01) so the message stays on one line, and JSON quotes left alone.
func quote(s string) string {
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
