package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/toolcall"
)

// gemma4Layout is Gemma 4's chat template (the revision of 2026-07-09 that
// Google published for E2B and E4B, and its variant for 26B-A4B and 31B):
// <bos>, turns <|turn>ROLE\n ... <turn|>\n with the assistant's role named
// "model", the system message and the tool declarations in one system
// turn, calls as <|tool_call>call:NAME{...}<tool_call|>, and the tool
// responses inside the model's turn, which goes on after them:
//
//	<|turn>model\n<|tool_call>call:search{query:<|"|>x<|"|>}<tool_call|>
//	<|tool_response>response:search{value:<|"|>RESULT<|"|>}<tool_response|>
//	ANSWER<turn|>\n
//
// The model hands the turn to the tools by writing <|tool_response>; the
// responses follow it, and the model writes its next calls or its answer
// with no new header. Thinking (enable_thinking) is off by default.
type gemma4Layout struct {
	// large is the 26B-A4B and 31B template, whose generation prompt closes
	// an empty thought channel while thinking is off.
	large bool
	// thinking is enable_thinking=true.
	thinking bool
}

// Gemma 4's markup.
const (
	gemma4BOS       = "<bos>"
	gemma4TurnStart = "<|turn>"
	gemma4ToolOpen  = "<|tool>"
	gemma4ToolClose = "<tool|>"
	// gemma4EmptyThought is the empty thought channel of the 31B
	// template's generation prompt.
	gemma4EmptyThought = "<|channel>thought\n<channel|>"
	gemma4ChannelOpen  = toolcall.Gemma4ChannelOpen
	gemma4ChannelClose = toolcall.Gemma4ChannelClose
)

func (g gemma4Layout) generationPrompt() string {
	p := gemma4TurnStart + "model\n"
	if g.large && !g.thinking {
		p += gemma4EmptyThought
	}
	return p
}

// gemma4ThoughtOpen opens the thought channel: the generation prompt
// after tool responses writes it while thinking is on.
const gemma4ThoughtOpen = gemma4ChannelOpen + "thought\n"

// gemma4Reasoning reads the reasoning off a model message's text as a
// reasoning parser would: the text of its first thought channel, after
// "<|channel>thought\n" (or "<|channel>") and before "<channel|>", less
// one newline at its end; "" when there is none. The template takes it
// from reasoning_content, which agentrl's Message has not.
func gemma4Reasoning(text string) string {
	_, after, ok := strings.Cut(text, gemma4ChannelOpen)
	if !ok {
		return ""
	}
	body, _, ok := strings.Cut(after, gemma4ChannelClose)
	if !ok {
		return ""
	}
	body = strings.TrimPrefix(body, "thought\n")
	return strings.TrimSuffix(body, "\n")
}

// turns lays out the conversation as the template does. A tool message is
// rendered inside the model turn of the assistant message with calls that
// it follows, named after its Name where set, else after the j-th call
// for the j-th response (the template resolves a response's tool_call_id
// to its call's name; a response beyond the calls is "unknown"). A tool
// message that follows no call is refused (the template drops it).
func (g gemma4Layout) turns(msgs []Message, tools []json.RawMessage, addGenerationPrompt bool) ([][]span, error) {
	head := []span{{text: gemma4BOS}}
	loop := msgs
	if g.thinking || len(tools) > 0 || msgs[0].Role == "system" {
		head = append(head, span{text: gemma4TurnStart + "system\n"})
		if g.thinking {
			head = append(head, span{text: "<|think|>\n"})
		}
		if msgs[0].Role == "system" {
			head = append(head, span{text: pyStrip(msgs[0].Content)})
			loop = msgs[1:]
		}
		for i, tool := range tools {
			decl, err := gemma4Declaration(tool)
			if err != nil {
				return nil, fmt.Errorf("tool %d: %w", i, err)
			}
			head = append(head, span{text: gemma4ToolOpen})
			head = append(head, decl...)
			head = append(head, span{text: gemma4ToolClose})
		}
		head = append(head, span{text: toolcall.Gemma4TurnEnd + "\n"})
	}
	turns := [][]span{head}
	lastType := "" // the template's ns.prev_message_type after the last message
	prevRole := ""
	lastUser := -1
	for i, m := range loop {
		if m.Role == "user" {
			lastUser = i
		}
	}
	for i := 0; i < len(loop); i++ {
		m := loop[i]
		if m.Role == "tool" {
			return nil, fmt.Errorf("message %d: a tool response must follow an assistant message with tool calls (the template drops it)", i+len(msgs)-len(loop))
		}
		if m.Role != "system" && m.Role != "user" && m.Role != "assistant" {
			return nil, fmt.Errorf("message %d: unknown role %q", i+len(msgs)-len(loop), m.Role)
		}
		lastType = ""
		var turn []span
		model := m.Role == "assistant"
		if !(model && prevRole == "assistant") {
			role := m.Role
			if model {
				role = "model"
			}
			turn = append(turn, span{text: gemma4TurnStart + role + "\n"})
		}
		if r := gemma4Reasoning(m.Content); model && r != "" && i > lastUser {
			// The channel's opening is the model's after a header, the
			// generation prompt's after tool responses.
			open := span{text: gemma4ThoughtOpen, gen: true}
			if prevRole == "assistant" && g.thinking {
				open.gen = false
			}
			turn = append(turn, open, span{text: r + "\n" + gemma4ChannelClose, gen: true})
		}
		var responses []string
		var answered []ToolCall // the call each response is named after
		for i+1 < len(loop) && loop[i+1].Role == "tool" && len(m.ToolCalls) > 0 {
			i++
			responses = append(responses, loop[i].Content)
			name := loop[i].Name
			if j := len(answered); name == "" && j < len(m.ToolCalls) {
				name = m.ToolCalls[j].Name
			} else if name == "" {
				name = "unknown"
			}
			answered = append(answered, ToolCall{Name: name})
		}
		var content string
		if model {
			content = gemma4StripThinking(m.Content)
		} else {
			content = pyStrip(m.Content)
		}
		if len(m.ToolCalls) > 0 {
			var b strings.Builder
			for _, call := range m.ToolCalls {
				args, err := gemma4CallArguments(call.Arguments)
				if err != nil {
					return nil, fmt.Errorf("message %d: tool call %q: %w", i+len(msgs)-len(loop), call.Name, err)
				}
				b.WriteString(toolcall.Gemma4ToolCall(call.Name, args))
			}
			lastType = "tool_call"
			if len(responses) > 0 {
				// The model wrote the calls and handed the turn over.
				turn = append(turn, span{text: b.String() + toolcall.Gemma4ResponseOpen, gen: true})
				turn = append(turn, g.responses(answered, responses, false)...)
				lastType = "tool_response"
			} else {
				turn = append(turn, span{text: b.String(), gen: true})
			}
		}
		turn = append(turn, span{text: content, gen: model, plain: m.Role == "user"})
		next := ""
		for _, n := range loop[i+1:] {
			if n.Role != "tool" {
				next = n.Role
				break
			}
		}
		switch {
		case len(m.ToolCalls) > 0 && len(responses) == 0:
			turn = append(turn, span{text: toolcall.Gemma4ResponseOpen, gen: true})
		case model && next == "assistant":
			// The model's turn goes on in the next message.
		case len(responses) > 0 && pyStrip(content) == "" && next == "":
			// The turn ends with the responses: the model writes next.
		default:
			turn = append(turn, span{text: toolcall.Gemma4TurnEnd, gen: model}, span{text: "\n"})
		}
		if model && prevRole == "assistant" {
			// The same model turn: encoded with it, as one text.
			turns[len(turns)-1] = append(turns[len(turns)-1], turn...)
		} else {
			turns = append(turns, turn)
		}
		prevRole = m.Role
	}
	switch {
	case !addGenerationPrompt:
	case lastType == "":
		turns = append(turns, []span{{text: g.generationPrompt()}})
	case lastType == "tool_response" && g.thinking:
		turns[len(turns)-1] = append(turns[len(turns)-1], span{text: gemma4ThoughtOpen})
	}
	return turns, nil
}

// responses renders tool responses after the model's <|tool_response>
// (opened is false) as the template's format_tool_response_block writes
// them: the j-th named after the j-th call ("unknown" beyond them), its
// text as it is (plain, not trimmed) between <|"|> delimiters.
func (g gemma4Layout) responses(calls []ToolCall, responses []string, opened bool) []span {
	var spans []span
	for j, r := range responses {
		name := "unknown"
		if j < len(calls) {
			name = calls[j].Name
		}
		open := toolcall.Gemma4ResponseOpen
		if j == 0 && !opened {
			open = ""
		}
		spans = append(spans, span{text: open + "response:" + name + "{value:" + toolcall.Gemma4Quote},
			span{text: r, plain: true}, span{text: toolcall.Gemma4Quote + "}" + toolcall.Gemma4ResponseClose})
	}
	return spans
}

// observation is what follows a turn whose calls the model handed over
// with <|tool_response> (modelClosedTurn; otherwise it is written first):
// the responses, named after the calls, and nothing more, since the model
// goes on in the same turn (while thinking is on, in the thought channel
// this opens).
func (g gemma4Layout) observation(calls []ToolCall, responses []string, modelClosedTurn bool) []span {
	var spans []span
	if !modelClosedTurn {
		spans = append(spans, span{text: toolcall.Gemma4ResponseOpen})
	}
	spans = append(spans, g.responses(calls, responses, false)...)
	if g.thinking {
		spans = append(spans, span{text: gemma4ThoughtOpen})
	}
	return spans
}

// gemma4StripThinking is the template's strip_thinking: the text with each
// thought channel (from <|channel> to its <channel|>) removed, then
// trimmed.
func gemma4StripThinking(text string) string {
	var b strings.Builder
	for _, part := range strings.Split(text, gemma4ChannelClose) {
		if before, _, ok := strings.Cut(part, gemma4ChannelOpen); ok {
			part = before
		}
		b.WriteString(part)
	}
	return pyStrip(b.String())
}

// gemma4CallArguments are a call's arguments as the template writes them
// between the braces: each key of the JSON object (in dictsort's order)
// bare, a colon, its value through format_argument. No arguments write
// nothing; a string is refused, as the template refuses it.
func gemma4CallArguments(raw json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "", nil
	}
	v, err := decodePyValue(raw)
	if err != nil {
		return "", err
	}
	switch v := v.(type) {
	case nil:
		return "", nil
	case []pyMember:
		var b strings.Builder
		for i, m := range dictsort(v) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(m.key + ":")
			if err := gemma4Argument(&b, m.value, false); err != nil {
				return "", err
			}
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("arguments must be a JSON object (the template refuses a string), got %s", raw)
}

// decodePyValue reads one JSON value as readPyValue does, refusing
// trailing data.
func decodePyValue(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := readPyValue(dec)
	if err != nil {
		return nil, fmt.Errorf("arguments: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("arguments: unexpected data after the JSON value")
	}
	return v, nil
}

// dictsort orders an object's members as Jinja's dictsort does: by key,
// case-insensitively, keeping the order of keys that compare equal.
func dictsort(members []pyMember) []pyMember {
	out := slices.Clone(members)
	slices.SortStableFunc(out, func(a, b pyMember) int { return strings.Compare(strings.ToLower(a.key), strings.ToLower(b.key)) })
	return out
}

// gemma4Argument writes v as the template's format_argument: null, a
// string between <|"|> delimiters, true or false, an object in braces (its
// keys between delimiters with escapeKeys, bare without), a list in
// brackets, a number as Python prints it.
func gemma4Argument(b *strings.Builder, v any, escapeKeys bool) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		b.WriteString(toolcall.Gemma4Quote + v + toolcall.Gemma4Quote)
	case bool:
		b.WriteString(map[bool]string{true: "true", false: "false"}[v])
	case []pyMember:
		b.WriteByte('{')
		for i, m := range dictsort(v) {
			if i > 0 {
				b.WriteByte(',')
			}
			if escapeKeys {
				b.WriteString(toolcall.Gemma4Quote + m.key + toolcall.Gemma4Quote)
			} else {
				b.WriteString(m.key)
			}
			b.WriteByte(':')
			if err := gemma4Argument(b, m.value, escapeKeys); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, item := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := gemma4Argument(b, item, escapeKeys); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case json.Number:
		s, err := pyNumber(string(v))
		if err != nil {
			return err
		}
		switch s {
		case "Infinity":
			s = "inf"
		case "-Infinity":
			s = "-inf"
		}
		b.WriteString(s)
	default:
		return fmt.Errorf("unexpected value %v", v)
	}
	return nil
}

// gemma4Declaration is a tool as the template's format_function_declaration
// writes it, trimmed: declaration:NAME{description:<|"|>...<|"|>,
// parameters:{properties:{...},required:[...],type:<|"|>OBJECT<|"|>}}.
// Names, descriptions and keys are plain text; the delimiters are markup.
// A tool with a response declaration, a property of an object type
// without properties, or a type that is not a string is refused by name
// (the template's output for those is not reproduced).
func gemma4Declaration(raw json.RawMessage) ([]span, error) {
	v, err := decodePyValue(raw)
	if err != nil {
		return nil, err
	}
	tool, _ := v.([]pyMember)
	fn, _ := pyGet(tool, "function").([]pyMember)
	if fn == nil {
		return nil, fmt.Errorf("a tool must be {\"type\": \"function\", \"function\": {...}}")
	}
	if _, ok := pyLookup(fn, "response"); ok {
		return nil, fmt.Errorf("a function's \"response\" declaration is not rendered by agentrl")
	}
	w := &gemma4Writer{}
	name, err := pyStr(pyGet(fn, "name"))
	if err != nil {
		return nil, fmt.Errorf("name: %w", err)
	}
	desc, err := pyStr(pyGet(fn, "description"))
	if err != nil {
		return nil, fmt.Errorf("description: %w", err)
	}
	w.mark("declaration:")
	w.text(name)
	w.mark("{description:" + toolcall.Gemma4Quote)
	w.text(desc)
	w.mark(toolcall.Gemma4Quote)
	if params, _ := pyGet(fn, "parameters").([]pyMember); len(params) > 0 {
		w.mark(",parameters:{")
		if props, _ := pyGet(params, "properties").([]pyMember); len(props) > 0 {
			w.mark("properties:{")
			if err := w.parameters(props); err != nil {
				return nil, err
			}
			w.mark("},")
		}
		if req := pyGet(params, "required"); pyTruthy(req) {
			w.mark("required:")
			if err := w.required(req); err != nil {
				return nil, err
			}
			w.mark(",")
		}
		if typ := pyGet(params, "type"); pyTruthy(typ) {
			t, err := pyUpper(typ)
			if err != nil {
				return nil, err
			}
			w.mark("type:" + toolcall.Gemma4Quote + t + toolcall.Gemma4Quote + "}")
		}
	}
	w.mark("}")
	return w.spans, nil
}

// gemma4Writer collects the spans of a tool declaration.
type gemma4Writer struct{ spans []span }

func (w *gemma4Writer) mark(s string) { w.spans = append(w.spans, span{text: s}) }
func (w *gemma4Writer) text(s string) { w.spans = append(w.spans, span{text: s, plain: true}) }

// argument writes v through format_argument with escaped keys.
func (w *gemma4Writer) argument(v any) error {
	var b strings.Builder
	if err := gemma4Argument(&b, v, true); err != nil {
		return err
	}
	w.mark(b.String())
	return nil
}

// required writes a list of names as [<|"|>a<|"|>,...].
func (w *gemma4Writer) required(v any) error {
	list, ok := v.([]any)
	if !ok {
		return fmt.Errorf("\"required\" must be a list")
	}
	w.mark("[")
	for i, item := range list {
		s, err := pyStr(item)
		if err != nil {
			return fmt.Errorf("required: %w", err)
		}
		if i > 0 {
			w.mark(",")
		}
		w.mark(toolcall.Gemma4Quote)
		w.text(s)
		w.mark(toolcall.Gemma4Quote)
	}
	w.mark("]")
	return nil
}

// parameters is the template's format_parameters: each property (in
// dictsort's order) as
// KEY:{description:...,enum:...,items:{...},nullable:true,
// properties:{...},required:[...],type:<|"|>TYPE<|"|>}, what applies to its
// type.
func (w *gemma4Writer) parameters(props []pyMember) error {
	for i, p := range dictsort(props) {
		if i > 0 {
			w.mark(",")
		}
		value, _ := p.value.([]pyMember)
		if value == nil {
			return fmt.Errorf("property %q: its schema must be an object", p.key)
		}
		typ, err := pyUpper(pyGet(value, "type"))
		if err != nil {
			return fmt.Errorf("property %q: %w", p.key, err)
		}
		w.text(p.key)
		w.mark(":{")
		comma := false
		sep := func() {
			if comma {
				w.mark(",")
			}
			comma = true
		}
		if d := pyGet(value, "description"); pyTruthy(d) {
			s, err := pyStr(d)
			if err != nil {
				return fmt.Errorf("property %q: description: %w", p.key, err)
			}
			w.mark("description:" + toolcall.Gemma4Quote)
			w.text(s)
			w.mark(toolcall.Gemma4Quote)
			comma = true
		}
		switch typ {
		case "STRING":
			if enum := pyGet(value, "enum"); pyTruthy(enum) {
				sep()
				w.mark("enum:")
				if err := w.argument(enum); err != nil {
					return err
				}
			}
		case "ARRAY":
			if items, _ := pyGet(value, "items").([]pyMember); len(items) > 0 {
				sep()
				if err := w.items(items); err != nil {
					return fmt.Errorf("property %q: %w", p.key, err)
				}
			}
		}
		if pyTruthy(pyGet(value, "nullable")) {
			sep()
			w.mark("nullable:true")
		}
		if typ == "OBJECT" {
			inner, ok := pyGet(value, "properties").([]pyMember)
			if !ok {
				return fmt.Errorf("property %q: an object without \"properties\" is not rendered by agentrl", p.key)
			}
			sep()
			w.mark("properties:{")
			if err := w.parameters(inner); err != nil {
				return err
			}
			w.mark("}")
			if req := pyGet(value, "required"); pyTruthy(req) {
				sep()
				w.mark("required:")
				if err := w.required(req); err != nil {
					return err
				}
			}
		}
		sep()
		w.mark("type:" + toolcall.Gemma4Quote + typ + toolcall.Gemma4Quote + "}")
	}
	return nil
}

// items writes an array's items schema: items:{KEY:VALUE,...} in dictsort's
// order, null values left out.
func (w *gemma4Writer) items(items []pyMember) error {
	w.mark("items:{")
	first := true
	for _, it := range dictsort(items) {
		if it.value == nil {
			continue
		}
		if !first {
			w.mark(",")
		}
		first = false
		switch it.key {
		case "properties":
			w.mark("properties:{")
			if inner, ok := it.value.([]pyMember); ok {
				if err := w.parameters(inner); err != nil {
					return err
				}
			}
			w.mark("}")
		case "required":
			w.mark("required:")
			if err := w.required(it.value); err != nil {
				return err
			}
		case "type":
			w.mark("type:")
			var up any
			switch t := it.value.(type) {
			case string:
				up = strings.ToUpper(t)
			case []any:
				var list []any
				for _, x := range t {
					s, err := pyStr(x)
					if err != nil {
						return fmt.Errorf("items type: %w", err)
					}
					list = append(list, strings.ToUpper(s))
				}
				up = list
			default:
				return fmt.Errorf("items type must be a string or a list")
			}
			if err := w.argument(up); err != nil {
				return err
			}
		default:
			w.text(it.key)
			w.mark(":")
			if err := w.argument(it.value); err != nil {
				return err
			}
		}
	}
	w.mark("}")
	return nil
}

// pyLookup finds key in an object.
func pyLookup(obj []pyMember, key string) (any, bool) {
	for _, m := range obj {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

// pyGet is obj[key], nil when absent.
func pyGet(obj []pyMember, key string) any {
	v, _ := pyLookup(obj, key)
	return v
}

// pyTruthy is Jinja's truth of a JSON value.
func pyTruthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case string:
		return v != ""
	case json.Number:
		f, err := v.Float64()
		return err != nil || f != 0
	case []any:
		return len(v) > 0
	case []pyMember:
		return len(v) > 0
	}
	return true
}

// pyStr is a string value as the template prints it ("" when absent);
// other types are refused.
func pyStr(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	}
	return "", fmt.Errorf("expected a string, got %v", v)
}

// pyUpper is a schema's type through the upper filter ("" when absent);
// a type that is not a string (a list of types) is refused.
func pyUpper(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return strings.ToUpper(v), nil
	}
	return "", fmt.Errorf("a type that is not a string (%v) is not rendered by agentrl", v)
}
