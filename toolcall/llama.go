package toolcall

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// ParseLlama extracts the tool call of an assistant turn in Llama
// 3's format, the one its chat template renders:
//
//	{"name": "search", "parameters": {"query": "..."}}<|eot_id|>
//
// The turn, trimmed of white space and of one final <|eot_id|> or
// <|eom_id|>, is one call when it starts with "{" (after an optional
// <|python_tag|>, which the models write before a call when the system turn
// says "Environment: ipython"): a JSON object with a non-empty string
// "name" and "parameters" an object (absent or null mean {}); other keys
// are ignored. A turn that does not start with "{" holds no call (it may
// hold an <answer>). Llama 3 makes one call per turn, so anything after
// the object is an error, a second object too. "arguments", Hermes' name
// for the parameters, is refused: neither Meta's prompt format nor the
// template knows it, and reading a call that the format reward would
// credit in two spellings would train neither. Every problem is a
// *ParseError with its Kind, as ParseHermes gives.
func ParseLlama(text string) ([]Call, error) {
	body, ok := LlamaCall(text)
	if !ok {
		return nil, nil
	}
	for _, end := range LlamaJSON.TurnEnds() {
		if s, cut := strings.CutSuffix(body, end); cut {
			body = strings.TrimSpace(s)
			break
		}
	}
	dec := json.NewDecoder(strings.NewReader(body))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, &ParseError{Kind: KindMalformedJSON, Call: 1,
			Msg: fmt.Sprintf("tool call 1 is not valid JSON (%v): %s", err, Quote(body))}
	}
	if rest := strings.TrimSpace(body[dec.InputOffset():]); rest != "" {
		msg := fmt.Sprintf("unexpected text after tool call 1 (end the turn after its JSON object): %s", Quote(rest))
		if strings.HasPrefix(rest, "{") {
			msg = fmt.Sprintf("a second tool call after tool call 1: Llama 3's format makes one call per turn: %s", Quote(rest))
		}
		return nil, &ParseError{Kind: KindTrailingText, Call: 1, Msg: msg}
	}
	call, err := parseLlamaObject(raw)
	if err != nil {
		return nil, err
	}
	return []Call{call}, nil
}

// parseLlamaObject reads the call's JSON object.
func parseLlamaObject(raw json.RawMessage) (Call, error) {
	body := string(raw)
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return Call{}, &ParseError{Kind: KindMalformedJSON, Call: 1,
			Msg: fmt.Sprintf("tool call 1 must be a JSON object {\"name\": ..., \"parameters\": {...}}, got %s", Quote(body))}
	}
	rawName, ok := obj["name"]
	if !ok {
		return Call{}, &ParseError{Kind: KindMissingName, Call: 1,
			Msg: fmt.Sprintf("tool call 1 has no \"name\": %s", Quote(body))}
	}
	var name string
	if err := json.Unmarshal(rawName, &name); err != nil || strings.TrimSpace(name) == "" {
		return Call{}, &ParseError{Kind: KindMissingName, Call: 1,
			Msg: fmt.Sprintf("tool call 1: \"name\" must be a non-empty string, got %s", Quote(string(rawName)))}
	}
	if _, ok := obj["arguments"]; ok {
		return Call{}, &ParseError{Kind: KindBadArguments, Call: 1,
			Msg: fmt.Sprintf("tool call 1 (%s): a call's arguments go in \"parameters\", not \"arguments\": %s", name, Quote(body))}
	}
	params := json.RawMessage("{}")
	if p, ok := obj["parameters"]; ok && string(p) != "null" {
		if p[0] != '{' {
			return Call{}, &ParseError{Kind: KindBadArguments, Call: 1,
				Msg: fmt.Sprintf("tool call 1 (%s): \"parameters\" must be a JSON object, got %s", name, Quote(string(p)))}
		}
		var buf bytes.Buffer
		json.Compact(&buf, p) // valid: it was decoded
		params = buf.Bytes()
	}
	return Call{Name: name, Arguments: params}, nil
}
