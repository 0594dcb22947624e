package reward

import (
	"slices"
	"strings"

	"github.com/agentrl/agentrl/toolcall"
)

// The protocol's answer tags (the think and call tags are the syntax's:
// CallSyntax.ThinkTags and CallTags).
const (
	tagAnswerOpen  = toolcall.AnswerOpen
	tagAnswerClose = toolcall.AnswerClose
)

// FormatTurn is one assistant turn as the format reward sees it.
type FormatTurn struct {
	Text    string // the assistant's text for the turn
	CallsOK bool   // the turn holds at least one tool call and they all parsed
}

// Format is 1 when the whole episode follows the protocol, in the tool-call
// syntax calls of the policy's chat format, else 0:
//   - every turn but the last holds parseable tool calls (CallsOK) and no
//     <answer> tag;
//   - the last turn holds exactly one <answer>...</answer>, no tool call
//     (Hermes, Qwen3.5 and Gemma 4: no tool-call tag after its
//     reasoning, which may mention them; Llama 3: it does not start with
//     the "{" of a call), and nothing after </answer> but whitespace and
//     an optional end of turn (Hermes: <|im_end|>; Llama 3: <|eot_id|> or
//     <|eom_id|>; Gemma 4: <turn|>);
//   - in every turn the think blocks (<think>...</think>; Gemma 4's
//     <|channel>...<channel|>: calls.ThinkTags) are optional but balanced
//     (never nested, every one closed) and the action (the call or
//     <answer>) comes after the last close; where the generation prompt
//     or the observation opens the first block (Qwen3.5, Gemma 4:
//     calls.PromptOpensThink), a turn whose first think tag is a close
//     closes that block.
//
// It is all-or-nothing so that it cannot be farmed turn by turn.
func Format(calls toolcall.CallSyntax, turns []FormatTurn) float64 {
	if len(turns) == 0 {
		return 0
	}
	for i, t := range turns {
		ok := i == len(turns)-1 && answerTurnOK(calls, t.Text) || i < len(turns)-1 && toolTurnOK(calls, t)
		if !ok {
			return 0
		}
	}
	return 1
}

// toolTurnOK checks a turn that should call tools.
func toolTurnOK(calls toolcall.CallSyntax, t FormatTurn) bool {
	if !t.CallsOK || strings.Contains(t.Text, tagAnswerOpen) || strings.Contains(t.Text, tagAnswerClose) {
		return false
	}
	// A call only inside the reasoning (before the last </think>, or
	// Gemma 4's <channel|>) is no call.
	start := callStart(calls, t.Text)
	return start >= 0 && thinkOK(calls, t.Text, start)
}

// callStart is the byte offset of the turn's first tool call, -1 when it
// has none: Hermes' and Qwen3.5's first <tool_call> after the reasoning
// (calls.ContentStart), Gemma 4's first <|tool_call> after its thought
// channel, Llama 3's "{".
func callStart(calls toolcall.CallSyntax, text string) int {
	if calls == toolcall.LlamaJSON {
		call, ok := toolcall.LlamaCall(text)
		if !ok {
			return -1
		}
		return strings.Index(text, call)
	}
	from := calls.ContentStart(text)
	open, _ := calls.CallTags()
	i := strings.Index(text[from:], open)
	if i < 0 {
		return -1
	}
	return from + i
}

// answerTurnOK checks the final turn.
func answerTurnOK(calls toolcall.CallSyntax, text string) bool {
	switch calls {
	case toolcall.LlamaJSON:
		if _, ok := toolcall.LlamaCall(text); ok {
			return false
		}
	default:
		callOpen, callClose := calls.CallTags()
		if content := text[calls.ContentStart(text):]; strings.Contains(content, callOpen) || strings.Contains(content, callClose) {
			return false
		}
	}
	if strings.Count(text, tagAnswerOpen) != 1 || strings.Count(text, tagAnswerClose) != 1 {
		return false
	}
	open, end := strings.Index(text, tagAnswerOpen), strings.Index(text, tagAnswerClose)
	if end < open {
		return false
	}
	rest := strings.TrimSpace(text[end+len(tagAnswerClose):])
	if rest != "" && !slices.Contains(calls.TurnEnds(), rest) {
		return false
	}
	return thinkOK(calls, text, open)
}

// thinkOK reports whether the think tags of text (calls.ThinkTags) are
// balanced and all close before byte offset action (ignored when
// negative). Where the prompt may open the block (calls.PromptOpensThink),
// text may start inside one: when its first think tag is a close.
func thinkOK(calls toolcall.CallSyntax, text string, action int) bool {
	tagThinkOpen, tagThinkClose := calls.ThinkTags()
	c, o := strings.Index(text, tagThinkClose), strings.Index(text, tagThinkOpen)
	open := calls.PromptOpensThink() && c >= 0 && (o < 0 || c < o)
	lastClose := -1
	for i := 0; i < len(text); {
		switch {
		case strings.HasPrefix(text[i:], tagThinkOpen):
			if open {
				return false
			}
			open = true
			i += len(tagThinkOpen)
		case strings.HasPrefix(text[i:], tagThinkClose):
			if !open {
				return false
			}
			open = false
			lastClose = i
			i += len(tagThinkClose)
		default:
			i++
		}
	}
	return !open && (action < 0 || lastClose < action)
}
