package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/agentrl/agentrl/toolcall"
)

// llamaLayout is Llama 3.1/3.2/3.3-Instruct's template with its defaults
// (tools_in_user_message true, no built-in tools): a system turn with the
// date lines, the tools (json.dumps with indent 4) at the head of the first
// user turn, one tool call per assistant message as a bare JSON object, and
// tool responses in "ipython" turns, each through tojson (a string comes out
// quoted). System, user and assistant contents are trimmed.
type llamaLayout struct {
	date string
}

const (
	llamaToolsIntro = "Given the following functions, please respond with a JSON for a function call " +
		"with its proper arguments that best answers the given prompt.\n\n" +
		`Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.` +
		"Do not use variables.\n\n"
)

// llamaHeader opens a turn of role.
func llamaHeader(role string) string {
	return llamaHeaderStart + role + llamaHeaderEnd + "\n\n"
}

func (l llamaLayout) turns(msgs []Message, tools []json.RawMessage, addGenerationPrompt bool) ([][]span, error) {
	system := ""
	if msgs[0].Role == "system" {
		system = pyStrip(msgs[0].Content)
		msgs = msgs[1:]
	}
	head := llamaBOS + llamaHeader("system")
	if len(tools) > 0 {
		head += "Environment: ipython\n"
	}
	head += "Cutting Knowledge Date: December 2023\nToday Date: " + l.date + "\n\n" + system + llamaEOT
	turns := [][]span{{{text: head}}}
	if len(tools) > 0 {
		// The first message after the system one, whatever its role,
		// becomes the user turn that carries the tools.
		if len(msgs) == 0 {
			return nil, fmt.Errorf("tools need a first user message to go into")
		}
		turn := []span{{text: llamaHeader("user") + llamaToolsIntro}}
		for i, tool := range tools {
			s, err := pyJSONIndent(tool, 4)
			if err != nil {
				return nil, fmt.Errorf("tool %d: %w", i, err)
			}
			turn = append(turn, span{text: s, plain: true}, span{text: "\n\n"})
		}
		turn = append(turn, span{text: pyStrip(msgs[0].Content), plain: true}, span{text: llamaEOT})
		turns = append(turns, turn)
		msgs = msgs[1:]
	}
	for i, m := range msgs {
		var turn []span
		switch {
		case m.Role == "tool":
			turn = []span{{text: llamaHeader("ipython")}, {text: pyString(m.Content), plain: true}, {text: llamaEOT}}
		case m.Role == "assistant" && len(m.ToolCalls) > 0:
			if len(m.ToolCalls) != 1 {
				return nil, fmt.Errorf("assistant message with %d tool calls: Llama 3's template takes one call per message", len(m.ToolCalls))
			}
			call := m.ToolCalls[0]
			if len(call.Arguments) == 0 {
				return nil, fmt.Errorf("tool call %q: no arguments", call.Name)
			}
			args, err := pyJSON(call.Arguments)
			if err != nil {
				return nil, fmt.Errorf("tool call %q: arguments: %w", call.Name, err)
			}
			// The content of a message with a call is not rendered.
			turn = []span{{text: llamaHeader("assistant")},
				{text: toolcall.LlamaToolCall(call.Name, args) + llamaEOT, gen: true}}
		case m.Role == "assistant":
			turn = []span{{text: llamaHeader("assistant")}, {text: pyStrip(m.Content) + llamaEOT, gen: true}}
		case m.Role == "user" || m.Role == "system":
			turn = []span{{text: llamaHeader(m.Role)}, {text: pyStrip(m.Content), plain: m.Role == "user"}, {text: llamaEOT}}
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
		turns = append(turns, turn)
	}
	if addGenerationPrompt {
		turns = append(turns, []span{{text: llamaHeader("assistant")}})
	}
	return turns, nil
}

// observation ends the assistant turn unless the model did, gives each
// response an ipython turn and opens the next assistant turn.
func (l llamaLayout) observation(_ []ToolCall, responses []string, modelClosedTurn bool) []span {
	var spans []span
	if !modelClosedTurn {
		spans = append(spans, span{text: llamaEOT})
	}
	for _, r := range responses {
		spans = append(spans, span{text: llamaHeader("ipython")}, span{text: pyString(r), plain: true}, span{text: llamaEOT})
	}
	return append(spans, span{text: llamaHeader("assistant")})
}

// pyString is s through tojson: a quoted JSON string.
func pyString(s string) string {
	var b strings.Builder
	writePyString(&b, s)
	return b.String()
}

// pyStrip is Python's str.strip(), which Jinja's trim filter calls: it
// removes what str.isspace calls white space, which is Go's unicode.IsSpace
// and the separators U+001C to U+001F.
func pyStrip(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) })
}
