package reward

import (
	"strings"

	"github.com/agentrl/agentrl/agent/protocol"
)

// The protocol's tags.
const (
	tagThinkOpen     = protocol.ThinkOpen
	tagThinkClose    = protocol.ThinkClose
	tagToolCallOpen  = protocol.ToolCallOpen
	tagToolCallClose = protocol.ToolCallClose
	tagAnswerOpen    = protocol.AnswerOpen
	tagAnswerClose   = protocol.AnswerClose
	tagEndOfTurn     = protocol.TurnEnd
)

// FormatTurn is one assistant turn as the format reward sees it.
type FormatTurn struct {
	Text    string // the assistant's text for the turn
	CallsOK bool   // the turn holds at least one tool call and they all parsed
}

// Format is 1 when the whole episode follows the protocol, else 0:
//   - every turn but the last holds parseable tool calls (CallsOK) and no
//     <answer> tag;
//   - the last turn holds exactly one <answer>...</answer>, no tool-call tag,
//     and nothing after </answer> but whitespace and an optional <|im_end|>;
//   - in every turn the <think> blocks are optional but balanced (never
//     nested, every one closed) and the action (<tool_call> or <answer>)
//     comes after the last </think>.
//
// It is all-or-nothing so that it cannot be farmed turn by turn.
func Format(turns []FormatTurn) float64 {
	if len(turns) == 0 {
		return 0
	}
	for i, t := range turns {
		ok := i == len(turns)-1 && answerTurnOK(t.Text) || i < len(turns)-1 && toolTurnOK(t)
		if !ok {
			return 0
		}
	}
	return 1
}

// toolTurnOK checks a turn that should call tools.
func toolTurnOK(t FormatTurn) bool {
	if !t.CallsOK || strings.Contains(t.Text, tagAnswerOpen) || strings.Contains(t.Text, tagAnswerClose) {
		return false
	}
	return thinkOK(t.Text, strings.Index(t.Text, tagToolCallOpen))
}

// answerTurnOK checks the final turn.
func answerTurnOK(text string) bool {
	if strings.Contains(text, tagToolCallOpen) || strings.Contains(text, tagToolCallClose) {
		return false
	}
	if strings.Count(text, tagAnswerOpen) != 1 || strings.Count(text, tagAnswerClose) != 1 {
		return false
	}
	open, end := strings.Index(text, tagAnswerOpen), strings.Index(text, tagAnswerClose)
	if end < open {
		return false
	}
	rest := strings.TrimSpace(text[end+len(tagAnswerClose):])
	if rest != "" && rest != tagEndOfTurn {
		return false
	}
	return thinkOK(text, open)
}

// thinkOK reports whether the think tags of text are balanced and all close
// before byte offset action (ignored when negative).
func thinkOK(text string, action int) bool {
	open := false
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
