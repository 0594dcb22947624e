package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Gemma 4's tokens for a tool call and its response, as its chat template
// writes them: <|tool_call>call:NAME{ARGS}<tool_call|>, then
// <|tool_response>response:NAME{value:<|"|>TEXT<|"|>}<tool_response|>.
// Gemma4Quote delimits a string value.
const (
	Gemma4CallOpen      = "<|tool_call>"
	Gemma4CallClose     = "<tool_call|>"
	Gemma4ResponseOpen  = "<|tool_response>"
	Gemma4ResponseClose = "<tool_response|>"
	Gemma4Quote         = `<|"|>`
	// Gemma4TurnEnd ends a Gemma 4 turn.
	Gemma4TurnEnd = "<turn|>"
	// Gemma4ChannelOpen and Gemma4ChannelClose delimit a channel, the
	// thought channel (<|channel>thought\n...<channel|>) holding the
	// reasoning.
	Gemma4ChannelOpen  = "<|channel>"
	Gemma4ChannelClose = "<channel|>"
)

// Gemma4ToolCall is one call as Gemma 4's chat template renders it; args
// are its arguments as the template's format_argument writes them, without
// the braces (key:value pairs, keys sorted, bare).
func Gemma4ToolCall(name, args string) string {
	return Gemma4CallOpen + "call:" + name + "{" + args + "}" + Gemma4CallClose
}

// ParseGemma4 extracts the tool calls of a Gemma 4 assistant turn, written
// as its chat template renders them:
//
//	<|tool_call>call:search{k:3,query:<|"|>Doctor Strange<|"|>}<tool_call|>
//
// Any text may precede the first block (the thought channel, content);
// the calls are read after the reasoning (CallSyntax.ContentStart), which
// may mention the tags. Between blocks only white space is allowed, and
// after the last only white space and one <|tool_response> (with which the model hands the turn to
// the tools) or <turn|>. Inside a block the arguments are key:value pairs
// separated by commas, keys bare, strings between <|"|> delimiters (taken
// as they are: the template escapes nothing), numbers, true, false and
// null as written, objects in braces (keys bare) and lists in brackets; a
// call with no arguments is call:NAME{}. The arguments come back as a JSON
// object, in the order written. Every problem is a *ParseError
// (unopened_tag, unclosed_tag, malformed_call, missing_name,
// bad_arguments, trailing_text).
func ParseGemma4(text string) ([]Call, error) {
	text = text[Gemma4.ContentStart(text):]
	first := strings.Index(text, Gemma4CallOpen)
	head := text
	if first >= 0 {
		head = text[:first]
	}
	if i := strings.Index(head, Gemma4CallClose); i >= 0 {
		return nil, &ParseError{Kind: KindUnopenedTag,
			Msg: fmt.Sprintf("found %s without a %s before it: %s", Gemma4CallClose, Gemma4CallOpen, Quote(text[i:]))}
	}
	if first < 0 {
		return nil, nil
	}
	var calls []Call
	for pos := first; ; {
		n := len(calls) + 1
		start := pos + len(Gemma4CallOpen)
		end := strings.Index(text[start:], Gemma4CallClose)
		if next := strings.Index(text[start:], Gemma4CallOpen); end < 0 || next >= 0 && next < end {
			return nil, &ParseError{Kind: KindUnclosedTag, Call: n,
				Msg: fmt.Sprintf("tool call %d has no closing %s: %s", n, Gemma4CallClose, Quote(text[pos:]))}
		}
		call, err := parseGemma4Body(text[start:start+end], n)
		if err != nil {
			return nil, err
		}
		calls = append(calls, call)
		pos = start + end + len(Gemma4CallClose)
		next := strings.Index(text[pos:], Gemma4CallOpen)
		if next < 0 {
			rest := strings.TrimSpace(text[pos:])
			for _, end := range []string{Gemma4ResponseOpen, Gemma4TurnEnd} {
				if after, ok := strings.CutPrefix(rest, end); ok {
					rest = strings.TrimSpace(after)
					break
				}
			}
			if rest != "" {
				return nil, &ParseError{Kind: KindTrailingText, Call: n,
					Msg: fmt.Sprintf("unexpected text after tool call %d (end the turn with %s after %s): %s", n, Gemma4ResponseOpen, Gemma4CallClose, Quote(rest))}
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

// parseGemma4Body reads call:NAME{ARGS}, the body of the n-th block.
func parseGemma4Body(body string, n int) (Call, error) {
	rest, ok := strings.CutPrefix(body, "call:")
	brace := strings.IndexByte(rest, '{')
	if !ok || brace < 0 || !strings.HasSuffix(rest, "}") {
		return Call{}, &ParseError{Kind: KindMalformedCall, Call: n,
			Msg: fmt.Sprintf("tool call %d must be call:NAME{ARGUMENTS}, got %s", n, Quote(body))}
	}
	name := rest[:brace]
	if name == "" || strings.ContainsAny(name, " \t\r\n<>{}[]:,\"") {
		return Call{}, &ParseError{Kind: KindMissingName, Call: n,
			Msg: fmt.Sprintf("tool call %d: the function name must be a non-empty word before {, got %s", n, Quote(name))}
	}
	p := gemma4Parser{s: rest[brace:]}
	var out bytes.Buffer
	if err := p.object(&out); err != nil || p.i != len(p.s) {
		if err == nil {
			err = fmt.Errorf("unexpected text after the arguments: %s", Quote(p.s[p.i:]))
		}
		return Call{}, &ParseError{Kind: KindBadArguments, Call: n,
			Msg: fmt.Sprintf("tool call %d (%s): the arguments are not key:value pairs as the chat template writes them (%v): %s", n, name, err, Quote(rest[brace:]))}
	}
	return Call{Name: name, Arguments: out.Bytes()}, nil
}

// gemma4Parser reads the template's format_argument notation into JSON.
type gemma4Parser struct {
	s string
	i int
}

// object reads {key:value,...} (keys bare) and writes it as a JSON object.
func (p *gemma4Parser) object(out *bytes.Buffer) error {
	p.i++ // '{'
	out.WriteByte('{')
	seen := map[string]bool{}
	for k := 0; ; k++ {
		if p.i < len(p.s) && p.s[p.i] == '}' && k == 0 {
			p.i++
			out.WriteByte('}')
			return nil
		}
		colon := strings.IndexByte(p.s[p.i:], ':')
		if colon <= 0 {
			return fmt.Errorf("expected key: at %s", Quote(p.s[p.i:]))
		}
		key := p.s[p.i : p.i+colon]
		if strings.ContainsAny(key, "{}[],") || strings.Contains(key, Gemma4Quote) {
			return fmt.Errorf("bad key %s", Quote(key))
		}
		if seen[key] {
			return fmt.Errorf("key %s given twice", Quote(key))
		}
		seen[key] = true
		if k > 0 {
			out.WriteByte(',')
		}
		writeJSONString(out, key)
		out.WriteByte(':')
		p.i += colon + 1
		if err := p.value(out); err != nil {
			return err
		}
		if p.i >= len(p.s) {
			return fmt.Errorf("unclosed {")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			out.WriteByte('}')
			return nil
		default:
			return fmt.Errorf("expected , or } at %s", Quote(p.s[p.i:]))
		}
	}
}

// value reads one value: a delimited string, an object, a list, or a bare
// number, true, false or null.
func (p *gemma4Parser) value(out *bytes.Buffer) error {
	rest := p.s[p.i:]
	switch {
	case strings.HasPrefix(rest, Gemma4Quote):
		end := strings.Index(rest[len(Gemma4Quote):], Gemma4Quote)
		if end < 0 {
			return fmt.Errorf("unclosed %s string", Gemma4Quote)
		}
		writeJSONString(out, rest[len(Gemma4Quote):len(Gemma4Quote)+end])
		p.i += 2*len(Gemma4Quote) + end
		return nil
	case strings.HasPrefix(rest, "{"):
		return p.object(out)
	case strings.HasPrefix(rest, "["):
		p.i++
		out.WriteByte('[')
		if strings.HasPrefix(p.s[p.i:], "]") {
			p.i++
			out.WriteByte(']')
			return nil
		}
		for k := 0; ; k++ {
			if k > 0 {
				out.WriteByte(',')
			}
			if err := p.value(out); err != nil {
				return err
			}
			if p.i >= len(p.s) {
				return fmt.Errorf("unclosed [")
			}
			switch p.s[p.i] {
			case ',':
				p.i++
			case ']':
				p.i++
				out.WriteByte(']')
				return nil
			default:
				return fmt.Errorf("expected , or ] at %s", Quote(p.s[p.i:]))
			}
		}
	}
	end := strings.IndexAny(rest, ",}]")
	if end < 0 {
		end = len(rest)
	}
	word := rest[:end]
	switch word {
	case "true", "false", "null":
	default:
		var num json.Number
		if err := json.Unmarshal([]byte(word), &num); err != nil || word == "" {
			return fmt.Errorf("%s is not a string, number, true, false, null, object or list", Quote(word))
		}
	}
	out.WriteString(word)
	p.i += end
	return nil
}
