package envs

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// function is a tool in the OpenAI/Qwen function-calling format.
type function struct {
	Type     string       `json:"type"`
	Function functionSpec `json:"function"`
}

type functionSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Schemas describes each tool as
// {"type":"function","function":{"name":...,"description":...,"parameters":{...}}},
// the form Qwen's chat template prints inside <tools>. The keys keep this
// order and the parameters keep the tool's own key order (compacted);
// characters such as < > & are written as they are, as Python's json.dumps
// does, not escaped. It fails on a tool whose parameters are not valid JSON.
func Schemas(tools []Tool) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(tools))
	for i, t := range tools {
		if t == nil {
			return nil, fmt.Errorf("schemas: tool %d is nil", i)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		err := enc.Encode(function{Type: "function", Function: functionSpec{
			Name: t.Name(), Description: t.Description(), Parameters: t.Parameters()}})
		if err != nil {
			return nil, fmt.Errorf("schemas: tool %s: %w", t.Name(), err)
		}
		out[i] = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	return out, nil
}
