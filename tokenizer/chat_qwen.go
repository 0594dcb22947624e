package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/toolcall"
)

// qwenLayout is ChatML with Hermes-style tools as Qwen3's template lays it
// out, or Qwen2.5-Instruct's when qwen25 is set. Qwen2.5 differs in four
// places: a default system message when there is none, assistant content
// as it is (no thinking handling), tool calls each after a "\n", and tool
// call arguments always through tojson.
type qwenLayout struct {
	qwen25     bool
	noThinking bool // Qwen3's enable_thinking=false
}

// qwen25System is Qwen2.5's system message when the conversation has none.
const qwen25System = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

const (
	toolsHeader = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
		"You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
	toolsFooter = "\n</tools>\n\nFor each function call, return a json object with function name and arguments " +
		"within " + toolcall.ToolCallOpen + toolcall.ToolCallClose + " XML tags:\n" + toolcall.ToolCallOpen + "\n{\"name\": <function-name>, " +
		"\"arguments\": <args-json-object>}\n" + toolcall.ToolCallClose + toolcall.TurnEnd + "\n"
	// emptyThink is the think block of Qwen3's generation prompt with
	// enable_thinking=false, and of a last turn with no reasoning.
	emptyThink = toolcall.ThinkOpen + "\n\n" + toolcall.ThinkClose + "\n\n"
)

// generationPrompt opens the assistant turn the model writes.
func (q qwenLayout) generationPrompt() string {
	if q.noThinking {
		return toolcall.TurnStart + "assistant\n" + emptyThink
	}
	return toolcall.TurnStart + "assistant\n"
}

// turns lays out the conversation as the template does; every turn starts
// with "<|im_start|>".
func (q qwenLayout) turns(msgs []Message, tools []json.RawMessage, addGenerationPrompt bool) ([][]span, error) {
	var turns [][]span
	system, hasSystem := "", msgs[0].Role == "system"
	if hasSystem {
		system = msgs[0].Content
	}
	if q.qwen25 && !hasSystem {
		system, hasSystem = qwen25System, true
	}
	switch {
	case len(tools) > 0:
		head := toolcall.TurnStart + "system\n"
		if hasSystem {
			head += system + "\n\n"
		}
		turn := []span{{text: head + toolsHeader}}
		for i, tool := range tools {
			s, err := pyJSON(tool)
			if err != nil {
				return nil, fmt.Errorf("tool %d: %w", i, err)
			}
			turn = append(turn, span{text: "\n"}, span{text: s, plain: true})
		}
		turns = append(turns, append(turn, span{text: toolsFooter}))
	case hasSystem:
		turns = append(turns, []span{{text: toolcall.TurnStart + "system\n" + system + toolcall.TurnEnd + "\n"}})
	}
	lastQuery := lastQueryIndex(msgs)
	for i, m := range msgs {
		switch m.Role {
		case "system", "user":
			if m.Role == "system" && i == 0 {
				continue
			}
			turns = append(turns, []span{{text: toolcall.TurnStart + m.Role + "\n"},
				{text: m.Content, plain: m.Role == "user"}, {text: toolcall.TurnEnd + "\n"}})
		case "assistant":
			var turn []span
			var err error
			if q.qwen25 {
				turn, err = qwen25Assistant(m)
			} else {
				turn, err = q.qwen3Assistant(m, i > lastQuery, i == len(msgs)-1)
			}
			if err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
			turns = append(turns, turn)
		case "tool":
			if i == 0 || msgs[i-1].Role != "tool" {
				turns = append(turns, []span{{text: toolcall.TurnStart + "user"}})
			}
			last := &turns[len(turns)-1]
			*last = append(*last, toolResponse(m.Content)...)
			if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
				*last = append(*last, span{text: toolcall.TurnEnd + "\n"})
			}
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	if addGenerationPrompt {
		turns = append(turns, []span{{text: q.generationPrompt()}})
	}
	return turns, nil
}

// observation closes the assistant turn, puts the responses in one user
// turn and opens the next assistant turn.
func (q qwenLayout) observation(_ []ToolCall, responses []string, modelClosedTurn bool) []span {
	return userObservation(responses, modelClosedTurn, q.generationPrompt())
}

// userObservation is the observation of the Qwen templates: the assistant
// turn closed (unless the model closed it), the responses in one user turn,
// then prompt, which opens the next assistant turn.
func userObservation(responses []string, modelClosedTurn bool, prompt string) []span {
	var spans []span
	if !modelClosedTurn {
		spans = append(spans, span{text: toolcall.TurnEnd})
	}
	spans = append(spans, span{text: "\n"})
	if len(responses) > 0 {
		spans = append(spans, span{text: toolcall.TurnStart + "user"})
		for _, r := range responses {
			spans = append(spans, toolResponse(r)...)
		}
		spans = append(spans, span{text: toolcall.TurnEnd + "\n"})
	}
	return append(spans, span{text: prompt})
}

// toolResponse is one tool response in its tags, the response plain.
func toolResponse(text string) []span {
	return []span{{text: toolcall.ToolResponseBefore}, {text: text, plain: true}, {text: toolcall.ToolResponseAfter}}
}

// lastQueryIndex is the index of the last user message that is not a
// wrapped tool response, or the last index when there is none.
func lastQueryIndex(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == "user" && !(strings.HasPrefix(m.Content, toolcall.ToolResponseOpen) && strings.HasSuffix(m.Content, toolcall.ToolResponseClose)) {
			return i
		}
	}
	return len(msgs) - 1
}

// qwen3Assistant renders an assistant message as Qwen3 does. Thinking is
// split off the content at "</think>"; an assistant message after the last
// user query shows it in a "<think>" block when it has some or when it is
// the last message, and earlier ones drop it. With NoThinking the empty
// block of the last message is the generation prompt's, so not generated.
func (q qwenLayout) qwen3Assistant(m Message, afterQuery, last bool) ([]span, error) {
	content, reasoning := m.Content, ""
	if strings.Contains(content, toolcall.ThinkClose) {
		parts := strings.Split(content, toolcall.ThinkClose)
		content = strings.TrimLeft(parts[len(parts)-1], "\n")
		before := strings.Split(strings.TrimRight(parts[0], "\n"), toolcall.ThinkOpen)
		reasoning = strings.TrimLeft(before[len(before)-1], "\n")
	}
	head := toolcall.TurnStart + "assistant\n"
	var b strings.Builder
	switch think := toolcall.Think(strings.Trim(reasoning, "\n")); {
	case afterQuery && q.noThinking && last && think == emptyThink:
		head += emptyThink
		b.WriteString(strings.TrimLeft(content, "\n"))
	case afterQuery && (last || reasoning != ""):
		b.WriteString(think + strings.TrimLeft(content, "\n"))
	default:
		b.WriteString(content)
	}
	for j, call := range m.ToolCalls {
		if j > 0 || content != "" {
			b.WriteString("\n")
		}
		args, err := qwen3Arguments(call.Arguments)
		if err != nil {
			return nil, fmt.Errorf("tool call %q: %w", call.Name, err)
		}
		b.WriteString(toolcall.ToolCall(call.Name, args))
	}
	b.WriteString(toolcall.TurnEnd)
	return []span{{text: head}, {text: b.String(), gen: true}, {text: "\n"}}, nil
}

// qwen25Assistant renders an assistant message as Qwen2.5 does: content as
// it is, then each tool call after a "\n". The "\n" after the header is the
// generation prompt's even where the template writes it as the first call's.
func qwen25Assistant(m Message) ([]span, error) {
	var b strings.Builder
	b.WriteString(m.Content)
	for _, call := range m.ToolCalls {
		if len(call.Arguments) == 0 {
			return nil, fmt.Errorf("tool call %q: no arguments", call.Name)
		}
		args, err := pyJSON(call.Arguments)
		if err != nil {
			return nil, fmt.Errorf("tool call %q: arguments: %w", call.Name, err)
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(toolcall.ToolCall(call.Name, args))
	}
	b.WriteString(toolcall.TurnEnd)
	return []span{{text: toolcall.TurnStart + "assistant\n"}, {text: b.String(), gen: true}, {text: "\n"}}, nil
}

// qwen3Arguments prints a tool call's arguments as Qwen3's template does: a
// string as it is, anything else through tojson.
func qwen3Arguments(raw json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "", fmt.Errorf("no arguments")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	out, err := pyJSON(raw)
	if err != nil {
		return "", fmt.Errorf("arguments: %w", err)
	}
	return out, nil
}
