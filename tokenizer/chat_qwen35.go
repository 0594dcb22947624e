package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/toolcall"
)

// qwen35Layout is Qwen3.5's chat template: ChatML, the tools block before
// the system message, tool calls in the XML syntax (toolcall.QwenXML),
// every message's content trimmed, and a generation prompt that opens the
// think block ("<think>\n"; with enable_thinking=false an empty block).
//
// Qwen3.8's template is the same layout with three changes, which qwen38
// switches on: the reasoning effort's instruction at the head of the
// system turn, every turn's think block kept unless preserve_thinking is
// false, and a call's non-string values all through tojson.
type qwen35Layout struct {
	noThinking   bool   // enable_thinking=false
	qwen38       bool   // Qwen3.8's template
	effort       string // Qwen3.8's reasoning_effort, resolved: xhigh, medium or low
	dropThinking bool   // Qwen3.8's preserve_thinking=false
}

const (
	qwen35ToolsHeader = "# Tools\n\nYou have access to the following functions:\n\n<tools>"
	qwen35ToolsFooter = "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n" +
		toolcall.ToolCallOpen + "\n" + toolcall.FunctionOpen + "example_function_name>\n" +
		toolcall.ParameterOpen + "example_parameter_1>\nvalue_1\n" + toolcall.ParameterClose + "\n" +
		toolcall.ParameterOpen + "example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n" + toolcall.ParameterClose + "\n" +
		toolcall.FunctionClose + "\n" + toolcall.ToolCallClose + "\n\n" +
		"<IMPORTANT>\nReminder:\n" +
		"- Function calls MUST follow the specified format: an inner " + toolcall.FunctionOpen + "...></function> block must be nested within " +
		toolcall.ToolCallOpen + toolcall.ToolCallClose + " XML tags\n" +
		"- Required parameters MUST be specified\n" +
		"- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n" +
		"- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\n" +
		"</IMPORTANT>"
	// qwen35ThinkOpen is what the generation prompt writes of the think
	// block when thinking is on: the model writes the rest.
	qwen35ThinkOpen = toolcall.ThinkOpen + "\n"
	// Qwen3.8's instructions for the reasoning efforts that have one
	// (medium has none).
	qwen38EffortXHigh = "Reasoning effort is set to xhigh. Please think carefully through the task, validate key assumptions, " +
		"consider plausible alternatives, and prioritize correctness, consistency, and clarity in the final answer."
	qwen38EffortLow = "Reasoning effort is set to low. Keep your thinking brief and focused, moving directly to the conclusion " +
		"without unnecessary elaboration."
)

// reasoningInstructions is what Qwen3.8's template writes at the head of
// the system turn: the instruction of the reasoning effort while thinking
// is on, nothing with enable_thinking=false, for medium, or for Qwen3.5.
func (q qwen35Layout) reasoningInstructions() string {
	if !q.qwen38 || q.noThinking {
		return ""
	}
	switch q.effort {
	case "xhigh":
		return qwen38EffortXHigh
	case "low":
		return qwen38EffortLow
	}
	return ""
}

// generationPrompt opens the assistant turn the model writes.
func (q qwen35Layout) generationPrompt() string {
	if q.noThinking {
		return toolcall.TurnStart + "assistant\n" + emptyThink
	}
	return toolcall.TurnStart + "assistant\n" + qwen35ThinkOpen
}

// turns lays out the conversation as the template does.
func (q qwen35Layout) turns(msgs []Message, tools []json.RawMessage, addGenerationPrompt bool) ([][]span, error) {
	var turns [][]span
	system := ""
	if msgs[0].Role == "system" {
		system = pyStrip(msgs[0].Content)
	}
	instructions := q.reasoningInstructions()
	switch {
	case len(tools) > 0:
		head := toolcall.TurnStart + "system\n"
		if instructions != "" {
			head += instructions + "\n\n"
		}
		turn := []span{{text: head + qwen35ToolsHeader}}
		for i, tool := range tools {
			s, err := pyJSON(tool)
			if err != nil {
				return nil, fmt.Errorf("tool %d: %w", i, err)
			}
			turn = append(turn, span{text: "\n"}, span{text: s, plain: true})
		}
		tail := qwen35ToolsFooter
		if system != "" {
			tail += "\n\n" + system
		}
		turns = append(turns, append(turn, span{text: tail + toolcall.TurnEnd + "\n"}))
	case q.qwen38:
		// A system turn when there is an instruction or a system message
		// that is not empty once trimmed, the instruction first.
		body := system
		if instructions != "" && body != "" {
			body = instructions + "\n\n" + body
		} else if instructions != "" {
			body = instructions
		}
		if body != "" {
			turns = append(turns, []span{{text: toolcall.TurnStart + "system\n" + body + toolcall.TurnEnd + "\n"}})
		}
	case msgs[0].Role == "system":
		turns = append(turns, []span{{text: toolcall.TurnStart + "system\n" + system + toolcall.TurnEnd + "\n"}})
	}
	lastQuery := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if c := pyStrip(msgs[i].Content); msgs[i].Role == "user" &&
			!(strings.HasPrefix(c, toolcall.ToolResponseOpen) && strings.HasSuffix(c, toolcall.ToolResponseClose)) {
			lastQuery = i
			break
		}
	}
	if lastQuery < 0 {
		return nil, fmt.Errorf("no user query found in messages (the template refuses a conversation without one)")
	}
	for i, m := range msgs {
		content := pyStrip(m.Content)
		switch m.Role {
		case "system":
			if i != 0 {
				return nil, fmt.Errorf("message %d: a system message must be the first (the template refuses one elsewhere)", i)
			}
		case "user":
			turns = append(turns, []span{{text: toolcall.TurnStart + "user\n"}, {text: content, plain: true}, {text: toolcall.TurnEnd + "\n"}})
		case "assistant":
			turn, err := q.assistant(m, content, i > lastQuery)
			if err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
			turns = append(turns, turn)
		case "tool":
			if i > 0 && msgs[i-1].Role != "tool" {
				turns = append(turns, []span{{text: toolcall.TurnStart + "user"}})
			}
			if len(turns) == 0 {
				turns = append(turns, nil)
			}
			last := &turns[len(turns)-1]
			*last = append(*last, toolResponse(content)...)
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

// assistant renders an assistant message (content already trimmed) as
// Qwen3.5 does. Thinking is split off the content at "</think>"; a message
// after the last user query shows it in a think block, empty when there is
// none, and earlier messages drop it. The block's "<think>\n" is the
// generation prompt's (mask 0), and so is the whole empty block with
// NoThinking, whose generation prompt writes it. The calls follow the
// content, after "\n\n" when there is content.
//
// Qwen3.8's template takes the reasoning from the message's
// reasoning_content, which agentrl's Message has not: the content is the
// text the model generated, think block included, and it is read as a
// reasoning parser reads it (the reasoning is the text before the first
// "</think>", after its "<think>" if any; the content is the text after
// the last), then each is trimmed, as the template trims both. Every
// message shows its think block unless DropThinking drops those up to the
// last user query.
func (q qwen35Layout) assistant(m Message, content string, afterQuery bool) ([]span, error) {
	reasoning := ""
	if q.qwen38 {
		content = m.Content
		if strings.Contains(content, toolcall.ThinkClose) {
			parts := strings.Split(content, toolcall.ThinkClose)
			before := strings.Split(parts[0], toolcall.ThinkOpen)
			reasoning, content = before[len(before)-1], parts[len(parts)-1]
		}
		content = pyStrip(content)
	} else if strings.Contains(content, toolcall.ThinkClose) {
		parts := strings.Split(content, toolcall.ThinkClose)
		before := strings.Split(strings.TrimRight(parts[0], "\n"), toolcall.ThinkOpen)
		reasoning = strings.TrimLeft(before[len(before)-1], "\n")
		content = strings.TrimLeft(parts[len(parts)-1], "\n")
	}
	reasoning = pyStrip(reasoning)
	showThink := afterQuery || (q.qwen38 && !q.dropThinking)
	head := toolcall.TurnStart + "assistant\n"
	var b strings.Builder
	switch {
	case showThink && q.noThinking && reasoning == "":
		head += emptyThink
	case showThink:
		head += qwen35ThinkOpen
		b.WriteString(reasoning + "\n" + toolcall.ThinkClose + "\n\n")
	}
	b.WriteString(content)
	for j, call := range m.ToolCalls {
		params, err := xmlParams(call.Arguments, q.qwen38)
		if err != nil {
			return nil, fmt.Errorf("tool call %q: %w", call.Name, err)
		}
		switch {
		case j > 0:
			b.WriteString("\n")
		case pyStrip(content) != "":
			b.WriteString("\n\n")
		}
		b.WriteString(toolcall.XMLToolCall(call.Name, params))
	}
	b.WriteString(toolcall.TurnEnd)
	return []span{{text: head}, {text: b.String(), gen: true}, {text: "\n"}}, nil
}

// xmlParams are a call's arguments, a JSON object, as the template writes
// them: in their order, each value a string as it is, an object or a list
// through tojson, anything else as Python's str prints what json.loads
// made of it (True, None, 1.0). With tojson (Qwen3.8's template) every
// value but a string goes through tojson (true, null, 1.0), and arguments
// that are the empty string write no parameter, as the template skips
// them.
func xmlParams(raw json.RawMessage, tojson bool) ([]toolcall.XMLParam, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil // no arguments: the template writes no parameter
	}
	v, err := decodePyValue(raw)
	if err != nil {
		return nil, err
	}
	if s, ok := v.(string); ok && s == "" && tojson {
		return nil, nil
	}
	obj, ok := v.([]pyMember)
	if !ok {
		return nil, fmt.Errorf("arguments must be a JSON object (the template lists its items), got %s", raw)
	}
	params := make([]toolcall.XMLParam, len(obj))
	for i, m := range obj {
		var s string
		switch v := m.value.(type) {
		case string:
			s = v
		case nil:
			s = "None"
			if tojson {
				s = "null"
			}
		case bool:
			s = "False"
			if v {
				s = "True"
			}
			if tojson {
				s = strings.ToLower(s)
			}
		case json.Number:
			if s, err = pyNumber(string(v)); err != nil {
				return nil, fmt.Errorf("argument %q: %w", m.key, err)
			}
		default:
			w := pyWriter{}
			if err := w.value(v, 0); err != nil {
				return nil, fmt.Errorf("argument %q: %w", m.key, err)
			}
			s = w.b.String()
		}
		params[i] = toolcall.XMLParam{Key: m.key, Value: s}
	}
	return params, nil
}

// observation closes the assistant turn, puts the responses (trimmed, as
// the template trims every content) in one user turn and opens the next
// assistant turn.
func (q qwen35Layout) observation(_ []ToolCall, responses []string, modelClosedTurn bool) []span {
	trimmed := make([]string, len(responses))
	for i, r := range responses {
		trimmed[i] = pyStrip(r)
	}
	return userObservation(trimmed, modelClosedTurn, q.generationPrompt())
}
