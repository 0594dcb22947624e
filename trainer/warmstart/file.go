package warmstart

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/agentrl/agentrl/tokenizer"
)

// demoFileMessage is one message of a demonstrations file: our form
// ({"name", "arguments"}) or OpenAI's ({"function": {"name", "arguments"}},
// arguments possibly a JSON string) for tool calls.
type demoFileMessage struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	ToolCalls []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Function  *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// LoadDemos reads a JSONL file of demonstrations, one {"messages": [...]}
// (or a bare list of messages) per line. A broken line is an error naming
// the file and line.
func LoadDemos(path string) ([][]tokenizer.Message, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("demonstrations: %w", err)
	}
	defer f.Close()
	var out [][]tokenizer.Message
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var rec struct {
			Messages []demoFileMessage `json:"messages"`
		}
		if b[0] == '[' {
			err = json.Unmarshal(b, &rec.Messages)
		} else {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, line, err)
		}
		if len(rec.Messages) == 0 {
			return nil, fmt.Errorf("%s line %d: no messages", path, line)
		}
		var msgs []tokenizer.Message
		for i, m := range rec.Messages {
			switch m.Role {
			case "system", "user", "assistant", "tool":
			default:
				return nil, fmt.Errorf("%s line %d message %d: role %q (want system, user, assistant or tool)", path, line, i+1, m.Role)
			}
			msg := tokenizer.Message{Role: m.Role, Content: m.Content}
			for _, tc := range m.ToolCalls {
				name, args := tc.Name, tc.Arguments
				if tc.Function != nil {
					name, args = tc.Function.Name, tc.Function.Arguments
				}
				if len(args) > 0 && args[0] == '"' { // OpenAI: arguments as a JSON string
					var s string
					if err := json.Unmarshal(args, &s); err == nil {
						args = json.RawMessage(s)
					}
				}
				if name == "" {
					return nil, fmt.Errorf("%s line %d message %d: a tool call has no name", path, line, i+1)
				}
				msg.ToolCalls = append(msg.ToolCalls, tokenizer.ToolCall{Name: name, Arguments: args})
			}
			msgs = append(msgs, msg)
		}
		out = append(out, msgs)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}
