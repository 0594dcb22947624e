package rollout

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/toolcall"
)

// ContextMode is how the context of an episode's next turn is made
// (env.context).
type ContextMode string

// The context modes.
const (
	// ContextAuto picks the model's: ContextTemplate when its own chat
	// template rewrites history (Qwen3's drops reasoning), ContextAppend
	// otherwise.
	ContextAuto ContextMode = ""
	// ContextAppend appends each observation to one growing sequence.
	ContextAppend ContextMode = "append"
	// ContextTemplate renders the whole conversation with the chat
	// template before each turn, as a serving engine does.
	ContextTemplate ContextMode = "template"
	// ContextWindow renders the question and the last Turns turns.
	ContextWindow ContextMode = "window"
	// ContextSummary renders the question, a summary of the turns before
	// the last Turns, and those turns.
	ContextSummary ContextMode = "summary"
)

// ParseContextMode reads env.context, refusing an unknown value by name.
func ParseContextMode(s string) (ContextMode, error) {
	switch m := ContextMode(s); m {
	case ContextAuto, ContextAppend, ContextTemplate, ContextWindow, ContextSummary:
		return m, nil
	}
	return "", fmt.Errorf("env.context: unknown context %q (want append, template, window or summary)", s)
}

// Context is how a rollout makes each turn's context.
type Context struct {
	Mode ContextMode
	// Turns is the number of latest turns window and summary keep whole.
	Turns int
	// Calls is how the model writes its tool calls, which Messages and
	// the summary read back (the chat format's; WithContext sets it).
	Calls toolcall.CallSyntax
}

// Renders reports whether the mode renders each turn's context from the
// conversation rather than appending to the sequence.
func (c Context) Renders() bool { return c.Mode != ContextAuto && c.Mode != ContextAppend }

// ConvTurn is one assistant turn of a conversation: the text the model
// generated, without the token that closed it, and the tool responses it
// was answered with.
type ConvTurn struct {
	Text      string
	Responses []string
}

// Messages are the messages the mode renders before the next turn: the
// system text (when not empty), the question, then the turns it keeps,
// each as the assistant's message (assistantMessage; a Gemma 4 turn begun
// in the thought channel the observation opened with that opening,
// openedThought) and one tool message per response (none after a Gemma 4
// turn without calls, whose template would drop them).
func (c Context) Messages(system, user string, turns []ConvTurn) []tokenizer.Message {
	var msgs []tokenizer.Message
	if system != "" {
		msgs = append(msgs, tokenizer.Message{Role: "system", Content: system})
	}
	msgs = append(msgs, tokenizer.Message{Role: "user", Content: user})
	kept := turns
	if (c.Mode == ContextWindow || c.Mode == ContextSummary) && len(turns) > c.Turns {
		kept = turns[len(turns)-c.Turns:]
		if c.Mode == ContextSummary {
			msgs = append(msgs, tokenizer.Message{Role: "user", Content: Summary(c.Calls, turns[:len(turns)-c.Turns])})
		}
	}
	for _, t := range kept {
		text := t.Text
		if c.Calls == toolcall.Gemma4 {
			text = openedThought(text)
		}
		m := assistantMessage(c.Calls, text)
		msgs = append(msgs, m)
		if c.Calls == toolcall.Gemma4 && len(m.ToolCalls) == 0 {
			// Gemma 4's template drops a tool message that follows no call
			// (a parse error's): the model is shown the turn alone.
			continue
		}
		for _, r := range t.Responses {
			msgs = append(msgs, tokenizer.Message{Role: "tool", Content: r})
		}
	}
	return msgs
}

// openedThought is a Gemma 4 turn's text with the thought channel's
// opening that the observation before it wrote (thinking on) put back:
// a turn whose first channel tag is <channel|> started inside the
// channel, and the conversation holds its reasoning whole.
func openedThought(text string) string {
	end, open := strings.Index(text, toolcall.Gemma4ChannelClose), strings.Index(text, toolcall.Gemma4ChannelOpen)
	if end >= 0 && (open < 0 || end < open) {
		return toolcall.Gemma4ChannelOpen + "thought\n" + text
	}
	return text
}

// assistantMessage is the message a client of a serving engine sends back
// for an assistant text written in syntax: its tool calls split off
// (toolcall.Split), each call's arguments a JSON string holding the text
// the model wrote, as the OpenAI API carries them; Qwen3.5's XML calls keep
// their arguments as the JSON object of the parameters' texts, which its
// template takes, and Gemma 4's as the JSON object ParseGemma4 reads,
// which its template takes too.
func assistantMessage(syntax toolcall.CallSyntax, text string) tokenizer.Message {
	head, calls, ok := toolcall.Split(syntax, text)
	m := tokenizer.Message{Role: "assistant", Content: head}
	if !ok {
		return m
	}
	for _, c := range calls {
		args := json.RawMessage(c.Args)
		if syntax != toolcall.QwenXML && syntax != toolcall.Gemma4 {
			args, _ = json.Marshal(c.Args)
		}
		m.ToolCalls = append(m.ToolCalls, tokenizer.ToolCall{Name: c.Name, Arguments: args})
	}
	return m
}

// SummaryChars bounds each response quoted in a summary.
const SummaryChars = 200

// Summary is the summary program of ContextSummary: one line per tool call
// of the turns it replaces, the call and the start of the response it
// got, or the turn's text (its first SummaryChars characters) when it
// made no call; calls is the syntax the turns' calls are written in.
func Summary(calls toolcall.CallSyntax, turns []ConvTurn) string {
	var b strings.Builder
	b.WriteString("Summary of the earlier turns:")
	for _, t := range turns {
		_, written, ok := toolcall.Split(calls, t.Text)
		if !ok {
			fmt.Fprintf(&b, "\n- said: %s", cut(t.Text))
			continue
		}
		for i, call := range written {
			resp := ""
			if i < len(t.Responses) {
				resp = t.Responses[i]
			}
			fmt.Fprintf(&b, "\n- %s %s: %s", call.Name, call.Args, cut(resp))
		}
	}
	return b.String()
}

// cut is s up to SummaryChars characters.
func cut(s string) string {
	if r := []rune(s); len(r) > SummaryChars {
		return string(r[:SummaryChars]) + "..."
	}
	return s
}

// Renderer renders a whole conversation with the generation prompt, as
// the chat template lays it out. A Chat that is one can make each turn's
// context in the modes that render (Context.Renders).
type Renderer interface {
	Render(msgs []tokenizer.Message, tools []json.RawMessage) ([]int32, error)
}

// Render renders msgs with the chat template and the generation prompt.
func (c *ChatFormat) Render(msgs []tokenizer.Message, tools []json.RawMessage) ([]int32, error) {
	ids, _, err := c.F.Render(msgs, tools, true)
	return ids, err
}

// ContextChat is a Chat that makes each turn's context itself: a rollout
// with one whose Context renders (Context.Renders) renders the
// conversation before every turn after the first and starts a new segment
// when that context does not extend the sequence so far.
type ContextChat interface {
	Chat
	Renderer
	Context() Context
}

// Context is the chat's context mode (see WithContext).
func (c *ChatFormat) Context() Context { return c.ctx }

// WithContext returns a copy of c that makes each turn's context with ctx;
// ContextAuto becomes the template's default (see ContextAuto).
func (c *ChatFormat) WithContext(ctx Context) *ChatFormat {
	out := *c
	ctx.Calls = c.F.CallSyntax()
	if ctx.Mode == ContextAuto {
		ctx.Mode = ContextAppend
		if c.F.RewritesHistory() {
			ctx.Mode = ContextTemplate
		}
	}
	out.ctx = ctx
	return &out
}
