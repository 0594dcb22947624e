package toolcall

import (
	"fmt"
	"strings"
)

// CallSyntax is how a model family writes a tool call in an assistant
// turn. The chat format says which one its family uses
// (tokenizer.ChatFormat.CallSyntax); the parser (Parse), the
// environment (envs), the format reward and the gateway read the turn
// with it.
type CallSyntax int

// The tool-call syntaxes. The zero value is Hermes, agentrl's own.
const (
	// Hermes is Qwen2.5's and Qwen3's (and the tiny word-level models'):
	// {"name": ..., "arguments": {...}} between <tool_call> tags (see
	// ToolCall), after any text, one or more per turn, the turn ended by
	// <|im_end|>.
	Hermes CallSyntax = iota
	// LlamaJSON is Llama 3.x's, as its chat template renders a call: the
	// whole turn is one bare JSON object {"name": ..., "parameters": {...}}
	// (see LlamaToolCall), ended by <|eot_id|>; one call per turn.
	LlamaJSON
	// QwenXML is Qwen3.5's: <function=NAME> with one <parameter=KEY> block
	// per argument, its value as text, between <tool_call> tags (see
	// XMLToolCall), after any text, one or more per turn, the turn ended by
	// <|im_end|>.
	QwenXML
	// Gemma4 is Gemma 4's: call:NAME{key:value,...} between <|tool_call>
	// and <tool_call|> (see Gemma4ToolCall), after any text, one or more
	// per turn, the model then handing the turn to the tools with
	// <|tool_response>.
	Gemma4
)

// String names the syntax.
func (s CallSyntax) String() string {
	switch s {
	case Hermes:
		return "hermes"
	case LlamaJSON:
		return "llama3-json"
	case QwenXML:
		return "qwen3.5-xml"
	case Gemma4:
		return "gemma4"
	}
	return fmt.Sprintf("CallSyntax(%d)", int(s))
}

// TurnEnds are the tokens that may end an assistant turn's text after its
// call or answer: <|im_end|> (Hermes, Qwen3.5's XML); <|eot_id|> or
// <|eom_id|> (Llama 3); <turn|> or <|tool_response>, after calls (Gemma 4).
// A fresh slice on each call.
func (s CallSyntax) TurnEnds() []string {
	switch s {
	case LlamaJSON:
		return []string{LlamaEOT, LlamaEOM}
	case Gemma4:
		return []string{Gemma4TurnEnd, Gemma4ResponseOpen}
	}
	return []string{TurnEnd}
}

// PromptOpensThink reports whether the family's generation prompt may
// write the opening of the turn's reasoning, so that a turn may close a
// block it did not open: Qwen3.5's "<think>" with thinking on, and Gemma
// 4's "<|channel>thought\n", which the observation after tool responses
// writes while thinking is on.
func (s CallSyntax) PromptOpensThink() bool { return s == QwenXML || s == Gemma4 }

// ThinkTags are the tags that open and close the family's reasoning:
// Gemma 4's thought channel (<|channel> and <channel|>), <think> and
// </think> for the others.
func (s CallSyntax) ThinkTags() (open, close string) {
	if s == Gemma4 {
		return Gemma4ChannelOpen, Gemma4ChannelClose
	}
	return ThinkOpen, ThinkClose
}

// CallTags are the tags that open and close a tool call in the family's
// syntax: Gemma 4's <|tool_call> and <tool_call|>, <tool_call> and
// </tool_call> for the others (Llama 3's bare JSON has none; see
// LlamaCall).
func (s CallSyntax) CallTags() (open, close string) {
	if s == Gemma4 {
		return Gemma4CallOpen, Gemma4CallClose
	}
	return ToolCallOpen, ToolCallClose
}

// ContentStart is the byte offset in an assistant turn's text where its
// content begins, after its reasoning, so that reasoning that mentions the
// call tags is never read as calls: for Hermes (Qwen3) and Qwen3.5
// (QwenXML) just after the last </think>, where their chat templates split
// the two (content.split('</think>')[-1]); for Gemma 4 just after the last
// <channel|>, which closes its thought channel (the template strips each
// channel from the content); 0 when the text has no such tag (a think
// block never closed is content, as the templates read it), and for
// Llama 3, whose turn is a call only when it starts with one.
func (s CallSyntax) ContentStart(text string) int {
	var end string
	switch s {
	case Hermes, QwenXML:
		end = ThinkClose
	case Gemma4:
		end = Gemma4ChannelClose
	default:
		return 0
	}
	i := strings.LastIndex(text, end)
	if i < 0 {
		return 0
	}
	return i + len(end)
}

// Parse extracts the tool calls of an assistant turn written in
// syntax: ParseHermes for Hermes, ParseLlama for Llama 3,
// ParseXML for Qwen3.5 (whose values schemas types; the JSON
// syntaxes do not need them), ParseGemma4 for Gemma 4.
func Parse(syntax CallSyntax, text string, schemas ParamSchemas) ([]Call, error) {
	switch syntax {
	case Hermes:
		return ParseHermes(text)
	case LlamaJSON:
		return ParseLlama(text)
	case QwenXML:
		return ParseXML(text, schemas)
	case Gemma4:
		return ParseGemma4(text)
	}
	return nil, fmt.Errorf("tool-call syntax %v: agentrl parses only %v, %v, %v and %v", syntax, Hermes, LlamaJSON, QwenXML, Gemma4)
}

// Llama 3's tokens that end an assistant turn, and the tag its models may
// put before a call when the system turn says "Environment: ipython" (as
// the template's does when there are tools).
const (
	LlamaEOT       = "<|eot_id|>"
	LlamaEOM       = "<|eom_id|>"
	LlamaPythonTag = "<|python_tag|>"
)

// LlamaToolCall is one call as Llama 3's chat template renders it;
// parameters is the call's JSON object, already encoded.
func LlamaToolCall(name, parameters string) string {
	return "{\"name\": \"" + name + "\", \"parameters\": " + parameters + "}"
}

// LlamaCall finds the tool call of a Llama 3 assistant turn: a turn whose
// text, after white space and one optional <|python_tag|> (and white space
// after it), starts with "{" is a call. It returns the text from that "{"
// on, and false when the turn holds no call.
func LlamaCall(text string) (call string, ok bool) {
	rest := strings.TrimSpace(text)
	if after, tagged := strings.CutPrefix(rest, LlamaPythonTag); tagged {
		rest = strings.TrimSpace(after)
	}
	if !strings.HasPrefix(rest, "{") {
		return "", false
	}
	return rest, true
}
