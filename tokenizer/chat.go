package tokenizer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentrl/agentrl/toolcall"
)

// ToolCall is a function call made by an assistant message.
type ToolCall struct {
	Name string
	// Arguments is a JSON value, printed as the template prints it: Qwen3
	// inserts a JSON string as its text and anything else through tojson;
	// Qwen2.5 and Llama 3 put everything through tojson; Qwen3.5 and
	// Qwen3.8 take an object and write each member as a parameter (see
	// xmlParams).
	Arguments json.RawMessage
}

// Message is one message of a conversation. Role is "system", "user",
// "assistant" or "tool" (a tool's response).
type Message struct {
	Role      string
	Content   string
	ToolCalls []ToolCall
	// Name is, for a tool message, the function its response is named
	// after where the caller resolved it (an OpenAI request's tool_call_id
	// matched to its call, as Gemma 4's template does); "" names it after
	// the call in its position. Only Gemma 4's template writes it.
	Name string
}

// ChatFormat renders conversations exactly as the chat template of the
// tokenizer's model family lays them out, straight to token ids and turn by
// turn, so that a trajectory is built by appending spans. The formats are
// written by hand, one per family (see Family); NewChatFormat recognises the
// family by its chat_template and refuses any other template.
//
// Only markup yields added tokens: the template's own text, the system
// message (the operator's instruction) and assistant turns (what the policy
// generates). Text from outside is plain: user turns (questions, passages),
// tool responses and tool specs are encoded with no added tokens, so a
// result that spells "<|im_end|>" or "<|eot_id|>" stays that text and cannot
// end a turn or open one.
type ChatFormat struct {
	tok    *Tokenizer
	family Family
	opts   ChatOptions
	layout layout
	stops  []int32
}

// ChatOptions are the switches of the chat templates that agentrl
// implements; each belongs to one family and is refused by the others.
type ChatOptions struct {
	// NoThinking is Qwen3's, Qwen3.5's and Qwen3.8's enable_thinking=false:
	// the generation prompt ends with an empty "<think>\n\n</think>\n\n"
	// block, which is the template's (mask 0), not the model's. For Gemma
	// 4 it is the template's default, which changes nothing.
	NoThinking bool
	// ReasoningEffort is Qwen3.8's reasoning_effort: "xhigh", "medium" or
	// "low", or "" for the template's default (xhigh). While thinking is
	// on, xhigh and low write the template's instruction for that effort at
	// the head of the system turn (making one when there is none); medium
	// writes none. With NoThinking the template writes no instruction.
	ReasoningEffort string
	// DropThinking is Qwen3.8's preserve_thinking=false: assistant turns
	// up to the last user query lose their reasoning and think block, as
	// Qwen3.5's always do. Unset, the template's default keeps every
	// turn's think block.
	DropThinking bool
	// Thinking is Gemma 4's enable_thinking=true: <|think|> at the head of
	// the system turn (making one when there is none), the reasoning of
	// turns after the last user message kept in a thought channel, and
	// after tool responses a generation prompt that opens the channel.
	Thinking bool
	// Date is Llama 3's date_string, the "Today Date:" line of the system
	// turn, written as "26 Jul 2024". Empty means the template's default:
	// "26 Jul 2024" for Llama 3.1 and 3.3; for Llama 3.2 the day the format
	// was made (the template's strftime_now("%d %b %Y")), so that a run's
	// prompts do not change at midnight.
	Date string
}

// ReasoningEfforts are the values of Qwen3.8's reasoning_effort, as its
// template lists them; it refuses any other.
var ReasoningEfforts = []string{"xhigh", "medium", "low"}

// layout is one family's chat format.
type layout interface {
	// turns lays out a whole conversation, one list of spans per turn.
	turns(msgs []Message, tools []json.RawMessage, addGenerationPrompt bool) ([][]span, error)
	// observation is what the environment appends after an assistant turn
	// that made calls (see ChatFormat.Observation); only Gemma 4's names
	// the responses after the calls.
	observation(calls []ToolCall, responses []string, modelClosedTurn bool) []span
}

// NewChatFormat picks the format of tok's chat template (see Family) with
// default options, after checking that tok has the added tokens it needs.
// A tokenizer with no chat template (agentrl's own word-level tokenizers)
// gets Qwen3's ChatML layout.
func NewChatFormat(tok *Tokenizer) (*ChatFormat, error) {
	family, err := templateFamily(tok.ChatTemplate())
	if err != nil {
		return nil, err
	}
	spec := familySpecs[family]
	for _, name := range spec.required {
		if _, ok := tok.addedID[name]; !ok {
			return nil, fmt.Errorf("chat format %s: the tokenizer has no added token %q", family, name)
		}
	}
	c := &ChatFormat{tok: tok, family: family}
	add := func(id int32) {
		for _, s := range c.stops {
			if s == id {
				return
			}
		}
		c.stops = append(c.stops, id)
	}
	add(tok.addedID[spec.turnEnd])
	if tok.EOS() >= 0 {
		add(tok.EOS())
	}
	for _, name := range spec.stops {
		if id, ok := tok.addedID[name]; ok {
			add(id)
		}
	}
	return c.WithOptions(ChatOptions{})
}

// WithOptions returns a copy of c that renders with opts. An option that
// c's family does not have is refused by name.
func (c *ChatFormat) WithOptions(opts ChatOptions) (*ChatFormat, error) {
	out := *c
	out.opts = opts
	if c.family != Qwen38 {
		if opts.ReasoningEffort != "" {
			return nil, fmt.Errorf("chat format %s: option ReasoningEffort (Qwen3.8's reasoning_effort) is not part of this template", c.family)
		}
		if opts.DropThinking {
			return nil, fmt.Errorf("chat format %s: option DropThinking (Qwen3.8's preserve_thinking=false) is not part of this template", c.family)
		}
	}
	if opts.Thinking && c.family != Gemma4 && c.family != Gemma4Large {
		return nil, fmt.Errorf("chat format %s: option Thinking (Gemma 4's enable_thinking=true) is not part of this template", c.family)
	}
	switch c.family {
	case Qwen25, Qwen3:
		if opts.Date != "" {
			return nil, fmt.Errorf("chat format %s: option Date (Llama 3's date_string) is not part of this template", c.family)
		}
		if opts.NoThinking && c.family != Qwen3 {
			return nil, fmt.Errorf("chat format %s: option NoThinking (Qwen3's enable_thinking=false) is not part of this template", c.family)
		}
		out.layout = qwenLayout{qwen25: c.family == Qwen25, noThinking: opts.NoThinking}
	case Qwen35:
		if opts.Date != "" {
			return nil, fmt.Errorf("chat format %s: option Date (Llama 3's date_string) is not part of this template", c.family)
		}
		out.layout = qwen35Layout{noThinking: opts.NoThinking}
	case Qwen38:
		if opts.Date != "" {
			return nil, fmt.Errorf("chat format %s: option Date (Llama 3's date_string) is not part of this template", c.family)
		}
		effort := opts.ReasoningEffort
		if effort == "" {
			effort = "xhigh" // reasoning_effort|default('xhigh')
		}
		if !slices.Contains(ReasoningEfforts, effort) {
			return nil, fmt.Errorf("chat format %s: option ReasoningEffort %q is not one the template takes (%s)",
				c.family, opts.ReasoningEffort, strings.Join(ReasoningEfforts, ", "))
		}
		out.layout = qwen35Layout{noThinking: opts.NoThinking, qwen38: true, effort: effort, dropThinking: opts.DropThinking}
	case Gemma4, Gemma4Large:
		if opts.Date != "" {
			return nil, fmt.Errorf("chat format %s: option Date (Llama 3's date_string) is not part of this template", c.family)
		}
		// NoThinking is enable_thinking=false, the template's default.
		if opts.NoThinking && opts.Thinking {
			return nil, fmt.Errorf("chat format %s: options NoThinking and Thinking contradict each other", c.family)
		}
		out.layout = gemma4Layout{large: c.family == Gemma4Large, thinking: opts.Thinking}
	case Llama31, Llama32:
		if opts.NoThinking {
			return nil, fmt.Errorf("chat format %s: option NoThinking (Qwen3's enable_thinking=false) is not part of this template", c.family)
		}
		date := opts.Date
		switch {
		case date == "" && c.family == Llama32:
			date = time.Now().Format("02 Jan 2006")
		case date == "":
			date = "26 Jul 2024"
		}
		out.layout = llamaLayout{date: date}
	}
	return &out, nil
}

// Family is the chat format's model family.
func (c *ChatFormat) Family() Family { return c.family }

// CallSyntax is how the family's assistant turns write a tool call:
// Hermes <tool_call> blocks (Qwen2.5, Qwen3 and the word-level tokenizers
// without a template), Llama 3's bare JSON object with "parameters",
// Qwen3.5's (and Qwen3.8's) XML in <tool_call> blocks, or Gemma 4's
// <|tool_call>call:NAME{...}<tool_call|>.
func (c *ChatFormat) CallSyntax() toolcall.CallSyntax { return familySpecs[c.family].calls }

// RewritesHistory reports whether the chat template renders a
// conversation so that a later prompt need not extend an earlier one:
// Qwen3's drops earlier reasoning and empty think blocks. Qwen3.5's keeps
// every turn after the last user query with its think block (an empty one
// too), so an episode's prompts extend each other, and is not counted;
// nor is Qwen3.8's, which keeps them too (and, by default, every earlier
// turn's). Gemma 4's 26B-A4B and 31B template is counted: its generation
// prompt writes an empty thought channel that the turn, rendered again,
// does not show. The E2B and E4B template renders an episode as it was
// generated when the model writes nothing before its calls (content
// written before them is rendered after their responses).
func (c *ChatFormat) RewritesHistory() bool { return c.family == Qwen3 || c.family == Gemma4Large }

// Tokenizer returns the tokenizer the format encodes with.
func (c *ChatFormat) Tokenizer() *Tokenizer { return c.tok }

// StopIDs are the ids that end an assistant turn: the family's end of turn
// ("<|im_end|>", "<|eot_id|>" or "<turn|>"), the eos token, the family's
// other ends ("<|endoftext|>"; "<|eom_id|>", "<|end_of_text|>"; Gemma 4's
// "<|tool_response>", with which the model hands its turn to the tools,
// and "<eos>"), and "</tool_call>" when it is a single added token (Qwen).
func (c *ChatFormat) StopIDs() []int32 { return append([]int32(nil), c.stops...) }

// Special returns the id of an added token such as "<tool_call>".
func (c *ChatFormat) Special(name string) (int32, bool) {
	id, ok := c.tok.addedID[name]
	return id, ok
}

// Render encodes a whole conversation, as the chat template renders it, and
// returns the action mask: 1 exactly on what the assistant generates (its
// content, thinking, tool calls and the token that ends its turn), 0 on
// everything else (the template's text, the assistant header, user and
// tool turns, Qwen3.5's "<think>\n" that its generation prompt writes, and
// Qwen3's empty think block when NoThinking put it in the
// generation prompt). A token that straddles the start of an assistant's
// text (a newline merged with the header's) counts as generated. User and
// tool contents and the tools are plain text (see ChatFormat); the ids are
// those of encoding RenderText's text when they spell no added token.
func (c *ChatFormat) Render(msgs []Message, tools []json.RawMessage, addGenerationPrompt bool) (ids []int32, mask []uint8, err error) {
	ids, mask, _, err = c.render(msgs, tools, addGenerationPrompt, 0, false)
	return ids, mask, err
}

// RenderEpisode is Render with the token boundaries of an episode: the
// text each assistant turn generates is encoded on its own, apart from the
// template's text before and after it, as a rollout samples a turn after a
// prompt encoded without it. Render encodes a turn whole, as transformers
// tokenizes apply_chat_template's text; the two differ only where a
// generated turn starts (or ends) with white space that joins the
// template's: Qwen3.5's generation prompt ends "<think>\n" and an empty
// think block starts "\n</think>", which Render encodes as one "\n\n" token
// that no rollout samples after the prompt's "\n". Demonstrations the
// policy learns to imitate are rendered so (the warm start, sft).
func (c *ChatFormat) RenderEpisode(msgs []Message, tools []json.RawMessage) (ids []int32, mask []uint8, err error) {
	ids, mask, _, err = c.render(msgs, tools, false, 0, true)
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
	ids, _, over, err = c.render(msgs, tools, addGenerationPrompt, limit, false)
	return ids, over, err
}

// render encodes the turns while there are at most limit ids (limit 0:
// all of them), and reports whether it stopped. With split, each run of
// generated spans is encoded apart from the spans around it.
func (c *ChatFormat) render(msgs []Message, tools []json.RawMessage, addGenerationPrompt bool, limit int, split bool) (ids []int32, mask []uint8, over bool, err error) {
	turns, err := c.turns(msgs, tools, addGenerationPrompt)
	if err != nil {
		return nil, nil, false, err
	}
	for _, turn := range turns {
		parts := [][]span{turn}
		if split {
			parts = splitGenerated(turn)
		}
		for _, part := range parts {
			rest := -1
			if limit > 0 {
				rest = limit - len(ids)
			}
			i, m := c.tok.encodeSpans(part, rest)
			ids = append(ids, i...)
			mask = append(mask, m...)
			if limit > 0 && len(ids) > limit {
				return ids, mask, true, nil
			}
		}
	}
	return ids, mask, false, nil
}

// splitGenerated cuts a turn's spans where generated text starts or ends:
// runs of spans that are all generated or all not.
func splitGenerated(turn []span) [][]span {
	var parts [][]span
	for i, s := range turn {
		if i == 0 || s.gen != turn[i-1].gen {
			parts = append(parts, nil)
		}
		parts[len(parts)-1] = append(parts[len(parts)-1], s)
	}
	return parts
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

func (c *ChatFormat) turns(msgs []Message, tools []json.RawMessage, addGenerationPrompt bool) ([][]span, error) {
	if len(msgs) == 0 {
		return nil, fmt.Errorf("chat format: no messages")
	}
	turns, err := c.layout.turns(msgs, tools, addGenerationPrompt)
	if err != nil {
		return nil, fmt.Errorf("chat format %s: %w", c.family, err)
	}
	return turns, nil
}

// Prompt encodes the start of an episode: the system turn (Qwen: with the
// tools block when there are tools, and none when system is "" and there
// are no tools, except Qwen2.5's default one; Llama 3: always, the tools
// then going into the user turn), the user turn, and the generation prompt.
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
// that called tools: the end of the turn unless the model closed it itself
// (Qwen: it was stopped at "</tool_call>"), the tool responses as the
// template lays them out, and the generation prompt. All of it has mask 0.
// With no responses it only closes the turn and opens the next assistant
// turn. The responses are plain text: one that spells an added token is
// encoded as that text, never as the token. calls are the turn's calls:
// Gemma 4's template names each response after its call (the j-th
// response, the j-th call; one with no call is "unknown"), and the model
// goes on in the same turn after <tool_response|>, with no generation
// prompt. The other families ignore calls.
func (c *ChatFormat) Observation(calls []ToolCall, responses []string, modelClosedTurn bool) []int32 {
	ids, _ := c.tok.encodeSpans(c.layout.observation(calls, responses, modelClosedTurn), -1)
	return ids
}
