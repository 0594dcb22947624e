package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/agent/protocol"
)

// ToolCall is a function call made by an assistant message.
type ToolCall struct {
	Name string
	// Arguments is a JSON object, printed as the template's tojson prints
	// it; a JSON string is inserted as its text, unchanged.
	Arguments json.RawMessage
}

// Message is one message of a conversation. Role is "system", "user",
// "assistant" or "tool" (a tool's response; consecutive tool messages share
// one user turn).
type Message struct {
	Role      string
	Content   string
	ToolCalls []ToolCall
}

// ChatFormat renders conversations in Qwen's ChatML with tools, exactly as
// the chat template of Qwen3's tokenizer_config.json lays them out, straight
// to token ids and turn by turn, so that a trajectory is built by appending
// spans. It works with any tokenizer that has "<|im_start|>" and
// "<|im_end|>" as added tokens.
//
// Only markup yields added tokens: the template's own text, the system
// message (the operator's instruction) and assistant turns (what the policy
// generates). Text from outside is plain: user turns (questions, passages),
// tool responses and tool specs are encoded with no added tokens, so a
// result that spells "<|im_end|>" or "</tool_response>" stays that text and
// cannot end a turn or open one.
type ChatFormat struct {
	tok   *Tokenizer
	stops []int32
}

// NewChatFormat checks that tok has the added tokens the format needs.
func NewChatFormat(tok *Tokenizer) (*ChatFormat, error) {
	for _, name := range []string{protocol.TurnStart, protocol.TurnEnd} {
		if _, ok := tok.addedID[name]; !ok {
			return nil, fmt.Errorf("chat format: the tokenizer has no added token %q", name)
		}
	}
	c := &ChatFormat{tok: tok, stops: []int32{tok.addedID[protocol.TurnEnd]}}
	add := func(id int32) {
		for _, s := range c.stops {
			if s == id {
				return
			}
		}
		c.stops = append(c.stops, id)
	}
	if tok.EOS() >= 0 {
		add(tok.EOS())
	}
	for _, name := range []string{protocol.EndOfText, protocol.ToolCallClose} {
		if id, ok := tok.addedID[name]; ok {
			add(id)
		}
	}
	return c, nil
}

// Tokenizer returns the tokenizer the format encodes with.
func (c *ChatFormat) Tokenizer() *Tokenizer { return c.tok }

// StopIDs are the ids that end an assistant turn: "<|im_end|>", the eos
// token, "<|endoftext|>", and "</tool_call>" when it is a single added token.
func (c *ChatFormat) StopIDs() []int32 { return append([]int32(nil), c.stops...) }

// Special returns the id of an added token such as "<tool_call>".
func (c *ChatFormat) Special(name string) (int32, bool) {
	id, ok := c.tok.addedID[name]
	return id, ok
}

// Render encodes a whole conversation, as the chat template renders it, and
// returns the action mask: 1 exactly on what the assistant generates (its
// content, thinking, tool calls and closing "<|im_end|>"), 0 on everything
// else (the template's text, "<|im_start|>assistant\n", the "\n" after
// "<|im_end|>", user and tool turns). A token that straddles the start of an
// assistant's text (a newline merged with the header's) counts as generated.
// User and tool contents and the tools are plain text (see ChatFormat); the
// ids are those of encoding RenderText's text when they spell no added token.
func (c *ChatFormat) Render(msgs []Message, tools []json.RawMessage, addGenerationPrompt bool) (ids []int32, mask []uint8, err error) {
	ids, mask, _, err = c.render(msgs, tools, addGenerationPrompt, 0)
	return ids, mask, err
}

// RenderLimit is Render for a conversation that must fit limit tokens
// (limit > 0): over reports one that does not, found with work and memory
// bounded by limit rather than by the conversation (every message renders
// to at least one token, so more messages than limit are over at once);
// the ids are then a prefix.
func (c *ChatFormat) RenderLimit(msgs []Message, tools []json.RawMessage, addGenerationPrompt bool, limit int) (ids []int32, over bool, err error) {
	if len(msgs) > limit {
		return nil, true, nil
	}
	ids, _, over, err = c.render(msgs, tools, addGenerationPrompt, limit)
	return ids, over, err
}

// render encodes the turns while there are at most limit ids (limit 0:
// all of them), and reports whether it stopped.
func (c *ChatFormat) render(msgs []Message, tools []json.RawMessage, addGenerationPrompt bool, limit int) (ids []int32, mask []uint8, over bool, err error) {
	turns, err := c.turns(msgs, tools, addGenerationPrompt)
	if err != nil {
		return nil, nil, false, err
	}
	for _, turn := range turns {
		rest := -1
		if limit > 0 {
			rest = limit - len(ids)
		}
		i, m := c.tok.encodeSpans(turn, rest)
		ids = append(ids, i...)
		mask = append(mask, m...)
		if limit > 0 && len(ids) > limit {
			return ids, mask, true, nil
		}
	}
	return ids, mask, false, nil
}

// RenderText returns the text Render encodes: what the chat template
// renders for the same messages.
func (c *ChatFormat) RenderText(msgs []Message, tools []json.RawMessage, addGenerationPrompt bool) (string, error) {
	turns, err := c.turns(msgs, tools, addGenerationPrompt)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, turn := range turns {
		for _, s := range turn {
			b.WriteString(s.text)
		}
	}
	return b.String(), nil
}

// Prompt encodes the start of an episode: the system turn (with the tools
// block when there are tools; none when system is "" and there are no
// tools), the user turn, and the generation prompt "<|im_start|>assistant\n".
// All of it has mask 0. System is markup; user and the tools are plain text.
func (c *ChatFormat) Prompt(system, user string, tools []json.RawMessage) ([]int32, error) {
	var msgs []Message
	if system != "" {
		msgs = append(msgs, Message{Role: "system", Content: system})
	}
	msgs = append(msgs, Message{Role: "user", Content: user})
	ids, _, err := c.Render(msgs, tools, true)
	return ids, err
}

// Observation encodes what the environment appends after an assistant turn
// that called tools: "<|im_end|>" first unless the model closed its turn
// itself (it was stopped at "</tool_call>"), then "\n", a user turn with one
// "<tool_response>" block per response, and the generation prompt. All of it
// has mask 0. With no responses it only closes the turn and opens the next
// assistant turn. The responses are plain text: one that spells an added
// token is encoded as that text, never as the token.
func (c *ChatFormat) Observation(responses []string, modelClosedTurn bool) []int32 {
	var spans []span
	if !modelClosedTurn {
		spans = append(spans, span{text: protocol.TurnEnd})
	}
	spans = append(spans, span{text: "\n"})
	if len(responses) > 0 {
		spans = append(spans, span{text: protocol.TurnStart + "user"})
		for _, r := range responses {
			spans = append(spans, toolResponse(r)...)
		}
		spans = append(spans, span{text: protocol.TurnEnd + "\n"})
	}
	spans = append(spans, span{text: protocol.TurnStart + "assistant\n"})
	ids, _ := c.tok.encodeSpans(spans, -1)
	return ids
}

// toolResponse is one tool response in its tags, the response plain.
func toolResponse(text string) []span {
	return []span{{text: protocol.ToolResponseBefore}, {text: text, plain: true}, {text: protocol.ToolResponseAfter}}
}

const (
	toolsHeader = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
		"You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
	toolsFooter = "\n</tools>\n\nFor each function call, return a json object with function name and arguments " +
		"within " + protocol.ToolCallOpen + protocol.ToolCallClose + " XML tags:\n" + protocol.ToolCallOpen + "\n{\"name\": <function-name>, " +
		"\"arguments\": <args-json-object>}\n" + protocol.ToolCallClose + protocol.TurnEnd + "\n"
)

// turns lays out the conversation as the template does, one list of spans
// per turn; every turn starts with "<|im_start|>".
func (c *ChatFormat) turns(msgs []Message, tools []json.RawMessage, addGenerationPrompt bool) ([][]span, error) {
	if len(msgs) == 0 {
		return nil, fmt.Errorf("chat format: no messages")
	}
	var turns [][]span
	switch {
	case len(tools) > 0:
		head := protocol.TurnStart + "system\n"
		if msgs[0].Role == "system" {
			head += msgs[0].Content + "\n\n"
		}
		turn := []span{{text: head + toolsHeader}}
		for i, tool := range tools {
			s, err := pyJSON(tool)
			if err != nil {
				return nil, fmt.Errorf("chat format: tool %d: %w", i, err)
			}
			turn = append(turn, span{text: "\n"}, span{text: s, plain: true})
		}
		turns = append(turns, append(turn, span{text: toolsFooter}))
	case msgs[0].Role == "system":
		turns = append(turns, []span{{text: protocol.TurnStart + "system\n" + msgs[0].Content + protocol.TurnEnd + "\n"}})
	}
	lastQuery := lastQueryIndex(msgs)
	for i, m := range msgs {
		switch m.Role {
		case "system", "user":
			if m.Role == "system" && i == 0 {
				continue
			}
			turns = append(turns, []span{{text: protocol.TurnStart + m.Role + "\n"},
				{text: m.Content, plain: m.Role == "user"}, {text: protocol.TurnEnd + "\n"}})
		case "assistant":
			turn, err := assistantTurn(m, i > lastQuery, i == len(msgs)-1)
			if err != nil {
				return nil, fmt.Errorf("chat format: message %d: %w", i, err)
			}
			turns = append(turns, turn)
		case "tool":
			if i == 0 || msgs[i-1].Role != "tool" {
				turns = append(turns, []span{{text: protocol.TurnStart + "user"}})
			}
			last := &turns[len(turns)-1]
			*last = append(*last, toolResponse(m.Content)...)
			if i == len(msgs)-1 || msgs[i+1].Role != "tool" {
				*last = append(*last, span{text: protocol.TurnEnd + "\n"})
			}
		default:
			return nil, fmt.Errorf("chat format: message %d: unknown role %q", i, m.Role)
		}
	}
	if addGenerationPrompt {
		turns = append(turns, []span{{text: protocol.TurnStart + "assistant\n"}})
	}
	return turns, nil
}

// lastQueryIndex is the index of the last user message that is not a
// wrapped tool response, or the last index when there is none.
func lastQueryIndex(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == "user" && !(strings.HasPrefix(m.Content, protocol.ToolResponseOpen) && strings.HasSuffix(m.Content, protocol.ToolResponseClose)) {
			return i
		}
	}
	return len(msgs) - 1
}

// assistantTurn renders an assistant message. Thinking is split off the
// content at "</think>"; an assistant message after the last user query
// shows it in a "<think>" block when it has some or when it is the last
// message, and earlier ones drop it.
func assistantTurn(m Message, afterQuery, last bool) ([]span, error) {
	content, reasoning := m.Content, ""
	if strings.Contains(content, protocol.ThinkClose) {
		parts := strings.Split(content, protocol.ThinkClose)
		content = strings.TrimLeft(parts[len(parts)-1], "\n")
		before := strings.Split(strings.TrimRight(parts[0], "\n"), protocol.ThinkOpen)
		reasoning = strings.TrimLeft(before[len(before)-1], "\n")
	}
	var b strings.Builder
	if afterQuery && (last || reasoning != "") {
		b.WriteString(protocol.Think(strings.Trim(reasoning, "\n")) + strings.TrimLeft(content, "\n"))
	} else {
		b.WriteString(content)
	}
	for j, call := range m.ToolCalls {
		if j > 0 || content != "" {
			b.WriteString("\n")
		}
		args, err := toolArguments(call.Arguments)
		if err != nil {
			return nil, fmt.Errorf("tool call %q: %w", call.Name, err)
		}
		b.WriteString(protocol.ToolCall(call.Name, args))
	}
	b.WriteString(protocol.TurnEnd)
	return []span{
		{text: protocol.TurnStart + "assistant\n"},
		{text: b.String(), gen: true},
		{text: "\n"},
	}, nil
}

// toolArguments prints a tool call's arguments as the template does: a
// string as it is, anything else through tojson.
func toolArguments(raw json.RawMessage) (string, error) {
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
