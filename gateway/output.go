package gateway

import (
	"crypto/rand"
	"strings"
	"unicode/utf8"

	"github.com/agentrl/agentrl/agent/protocol"
	"github.com/agentrl/agentrl/gateway/openai"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trainer/rollout"
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
		if end, ok := f.Special(protocol.ToolCallClose); !ok || toks[len(toks)-1] != end {
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
// well-formed <tool_call> blocks becomes tool calls (finish "tool_calls"),
// the text before them the content; otherwise all of it is content.
func makeOutput(text string, fin Finish, toolsOn bool) output {
	o := output{finish: openai.FinishStop}
	if fin == Length {
		o.finish = openai.FinishLength
	}
	if toolsOn && strings.Contains(text, protocol.ToolCallOpen) {
		if calls, head, ok := toolCallsOf(text); ok {
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

// toolCallsOf parses the <tool_call> blocks of text (rollout.SplitToolCalls:
// each call's arguments as the model wrote them, so that a client sending
// them back renders the same tokens) and returns the text before the first
// block.
func toolCallsOf(text string) ([]openai.ToolCall, string, bool) {
	head, written, ok := rollout.SplitToolCalls(text)
	if !ok {
		return nil, "", false
	}
	calls := make([]openai.ToolCall, len(written))
	for i, c := range written {
		calls[i] = openai.ToolCall{ID: callID(), Type: "function", Function: openai.FunctionCall{Name: c.Name, Arguments: c.Args}}
	}
	return calls, head, true
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
// not an incomplete UTF-8 character at the end, nothing from a
// "<tool_call>" on (calls are sent whole when they parse), and nothing that
// could still become the start of a stop string or of "<tool_call>",
// together with the newline that may precede a call.
func streamable(text string, stops []string, toolsOn bool) int {
	n := len(text)
	for n > 0 && !utf8.ValidString(text[:n]) {
		n--
	}
	holds := stops
	if toolsOn {
		if i := strings.Index(text[:n], protocol.ToolCallOpen); i >= 0 {
			n = i
		}
		holds = append([]string{protocol.ToolCallOpen}, stops...)
	}
	for _, h := range holds {
		for k := min(len(h)-1, n); k > 0; k-- {
			if strings.HasSuffix(text[:n], h[:k]) {
				n -= k
				break
			}
		}
	}
	if toolsOn {
		n = len(strings.TrimRight(text[:n], "\n"))
	}
	return n
}
