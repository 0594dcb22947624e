package gateway

import (
	"crypto/rand"
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentrl/agentrl/gateway/openai"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/toolcall"
)

// output is a finished choice as the API shows it.
type output struct {
	content   *string
	toolCalls []openai.ToolCall
	finish    string
}

// textIDs are the completion's ids that make its text: all but a closing
// stop token (<|im_end|>, eos), which ends the message and is not part of
// it. "</tool_call>" stays: it belongs to the call.
func textIDs(f *tokenizer.ChatFormat, toks []int32, fin Finish) []int32 {
	if fin == EndToken && len(toks) > 0 {
		if end, ok := f.Special(toolcall.ToolCallClose); !ok || toks[len(toks)-1] != end {
			return toks[:len(toks)-1]
		}
	}
	return toks
}

// cutAtStop returns text up to the first of the stop strings, and whether
// one was found.
func cutAtStop(text string, stops []string) (string, bool) {
	cut := -1
	for _, s := range stops {
		if i := strings.Index(text, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut < 0 {
		return text, false
	}
	return text[:cut], true
}

// makeOutput reads a finished completion: with tools on, text holding
// well-formed tool calls in the format's syntax (Hermes <tool_call>
// blocks, Llama 3's bare JSON object, Qwen3.5's XML calls, Gemma 4's
// <|tool_call> blocks) becomes tool calls (finish
// "tool_calls"), the text before them the content; otherwise all of it is
// content.
func makeOutput(text string, fin Finish, toolsOn bool, syntax toolcall.CallSyntax, schemas toolcall.ParamSchemas) output {
	o := output{finish: openai.FinishStop}
	if fin == Length {
		o.finish = openai.FinishLength
	}
	if toolsOn {
		if calls, head, ok := toolCallsIn(syntax, text, schemas); ok {
			o.toolCalls, o.finish = calls, openai.FinishToolCalls
			if head != "" {
				o.content = &head
			}
			return o
		}
	}
	o.content = &text
	return o
}

// toolCallsIn parses the tool calls of text in syntax; ok is false when
// it holds none or they do not parse. Qwen3.5's XML values are typed by
// schemas, the request's tools.
func toolCallsIn(syntax toolcall.CallSyntax, text string, schemas toolcall.ParamSchemas) (calls []openai.ToolCall, head string, ok bool) {
	switch syntax {
	case toolcall.LlamaJSON:
		return llamaToolCallsOf(text)
	case toolcall.QwenXML:
		return xmlToolCallsOf(text, schemas)
	case toolcall.Gemma4:
		return gemma4ToolCallsOf(text)
	}
	if !strings.Contains(text, toolcall.ToolCallOpen) {
		return nil, "", false
	}
	return toolCallsOf(text)
}

// toolCallsOf parses the <tool_call> blocks of text (toolcall.Split:
// after the reasoning, which may mention the tags, each call's arguments
// as the model wrote them, so that a client sending them back renders the
// same tokens) and returns the text before the first block.
func toolCallsOf(text string) ([]openai.ToolCall, string, bool) {
	head, written, ok := toolcall.Split(toolcall.Hermes, text)
	if !ok {
		return nil, "", false
	}
	calls := make([]openai.ToolCall, len(written))
	for i, c := range written {
		calls[i] = openai.ToolCall{ID: callID(), Type: "function", Function: openai.FunctionCall{Name: c.Name, Arguments: c.Args}}
	}
	return calls, head, true
}

// llamaToolCallsOf parses Llama 3's one call per turn, the whole text, its
// "parameters" kept as the model wrote them; such a turn has no content.
func llamaToolCallsOf(text string) ([]openai.ToolCall, string, bool) {
	if calls, err := toolcall.ParseLlama(text); err != nil || len(calls) == 0 {
		return nil, "", false
	}
	call, _ := toolcall.LlamaCall(text)
	var body struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if json.NewDecoder(strings.NewReader(call)).Decode(&body) != nil {
		return nil, "", false
	}
	return []openai.ToolCall{functionCall(body.Name, body.Parameters)}, "", true
}

// xmlToolCallsOf parses Qwen3.5's XML calls, each call's arguments the
// JSON object of its parameters typed by schemas (toolcall.ParseXML),
// and returns the text before the first call after the reasoning, which
// may mention the tags, less the "\n\n" the template puts between content
// and calls (toolcall.Split's head).
func xmlToolCallsOf(text string, schemas toolcall.ParamSchemas) ([]openai.ToolCall, string, bool) {
	head, _, ok := toolcall.Split(toolcall.QwenXML, text)
	if !ok {
		return nil, "", false
	}
	parsed, err := toolcall.ParseXML(text, schemas)
	if err != nil {
		return nil, "", false
	}
	calls := make([]openai.ToolCall, len(parsed))
	for i, c := range parsed {
		calls[i] = functionCall(c.Name, c.Arguments)
	}
	return calls, head, true
}

// gemma4ToolCallsOf parses Gemma 4's calls (toolcall.Split: after the
// thought channel, which may mention the tags), each call's arguments the
// JSON object of what the model wrote, and returns the text before the
// first call, whole: the template writes the calls right after the
// reasoning (which it reads back from the content) with nothing between.
func gemma4ToolCallsOf(text string) ([]openai.ToolCall, string, bool) {
	head, written, ok := toolcall.Split(toolcall.Gemma4, text)
	if !ok {
		return nil, "", false
	}
	calls := make([]openai.ToolCall, len(written))
	for i, c := range written {
		calls[i] = functionCall(c.Name, json.RawMessage(c.Args))
	}
	return calls, head, true
}

// functionCall is a call as the API shows it: a fresh id, the arguments
// as written ({} when absent or null).
func functionCall(name string, args json.RawMessage) openai.ToolCall {
	a := string(args)
	if a == "" || a == "null" {
		a = "{}"
	}
	return openai.ToolCall{ID: callID(), Type: "function", Function: openai.FunctionCall{Name: name, Arguments: a}}
}

// callArguments is the arguments of a call a client sends back, for the
// chat format to render. The API gives them as a string. Hermes keeps the
// string, which Qwen3's template writes as the text it holds. Llama 3's
// template puts arguments through tojson, where a string comes out quoted,
// so one that is a JSON object goes in as that object: the call renders as
// the model wrote it, {"name": ..., "parameters": {...}}. Qwen3.5's and
// Gemma 4's templates list the arguments' members, so they take the object
// too.
func callArguments(args string, syntax toolcall.CallSyntax) json.RawMessage {
	if syntax == toolcall.LlamaJSON || syntax == toolcall.QwenXML || syntax == toolcall.Gemma4 {
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(args), &obj) == nil && obj != nil {
			return json.RawMessage(args)
		}
	}
	raw, _ := json.Marshal(args)
	return raw
}

// callID is a fresh tool call id ("call_" and 24 random letters and digits).
func callID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, 24)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "call_" + string(b)
}

// streamable is how much of a growing completion's text may be sent now:
// not an incomplete UTF-8 character at the end, no tool call (calls are
// sent whole when they parse), and nothing that could still become the
// start of a stop string or of a call. A Hermes call starts at
// "<tool_call>", held back with the newline that may precede it; a Gemma 4
// call at "<|tool_call>"; a Llama 3 turn is a call when it starts with
// "{", so nothing of it is sent while it does or still could (white
// space, <|python_tag|>).
func streamable(text string, stops []string, toolsOn bool, syntax toolcall.CallSyntax) int {
	n := len(text)
	for n > 0 && !utf8.ValidString(text[:n]) {
		n--
	}
	holds := stops
	hermes := toolsOn && syntax != toolcall.LlamaJSON
	if toolsOn && syntax == toolcall.LlamaJSON && mayBeLlamaCall(text[:n]) {
		return 0
	}
	callOpen, _ := syntax.CallTags()
	if hermes {
		if i := strings.Index(text[:n], callOpen); i >= 0 {
			n = i
		}
		holds = append([]string{callOpen}, stops...)
	}
	for _, h := range holds {
		for k := min(len(h)-1, n); k > 0; k-- {
			if strings.HasSuffix(text[:n], h[:k]) {
				n -= k
				break
			}
		}
	}
	if hermes && syntax != toolcall.Gemma4 {
		n = len(strings.TrimRight(text[:n], "\n"))
	}
	return n
}

// mayBeLlamaCall reports whether a Llama 3 turn that starts with text is,
// or may still turn out to be, a tool call: it is one, or it is white
// space and the start of <|python_tag|> at most.
func mayBeLlamaCall(text string) bool {
	if _, ok := toolcall.LlamaCall(text); ok {
		return true
	}
	rest := strings.TrimLeftFunc(text, unicode.IsSpace)
	if after, ok := strings.CutPrefix(rest, toolcall.LlamaPythonTag); ok {
		return strings.TrimSpace(after) == ""
	}
	return strings.HasPrefix(toolcall.LlamaPythonTag, rest)
}
