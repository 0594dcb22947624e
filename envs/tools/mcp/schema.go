package mcp

import (
	"encoding/json"
	"slices"

	"github.com/agentrl/agentrl/envs"
)

// supportedKeywords are the schema keywords envs.Schema checks, plus the
// annotations it accepts.
var supportedKeywords = []string{"type", "properties", "required", "additionalProperties", "enum",
	"minLength", "maxLength", "minimum", "maximum", "items", "description", "title", "default", "examples"}

// parameters turns a server's inputSchema into a schema envs can compile:
// keywords envs does not check (pattern, format, anyOf, $ref, a type
// list, an additionalProperties schema, ...) are dropped, so the agentrl
// side checks what it can and the server checks the rest. A schema that
// still does not compile, or is missing, becomes {"type":"object"}.
func parameters(input json.RawMessage) json.RawMessage {
	var v map[string]any
	if json.Unmarshal(input, &v) != nil || v == nil {
		return json.RawMessage(`{"type":"object"}`)
	}
	reduced := reduce(v)
	reduced["type"] = "object"
	b, err := json.Marshal(reduced)
	if err != nil {
		return json.RawMessage(`{"type":"object"}`)
	}
	if _, err := envs.CompileSchema(b); err != nil {
		return json.RawMessage(`{"type":"object"}`)
	}
	return b
}

// reduce keeps the supported keywords of one schema object.
func reduce(s map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range s {
		if !slices.Contains(supportedKeywords, k) {
			continue
		}
		switch k {
		case "type":
			t, ok := v.(string)
			if !ok || t == "null" {
				continue // a list of types, or null: accept any
			}
		case "additionalProperties":
			if _, ok := v.(bool); !ok {
				continue // a schema for the extra properties: not checked here
			}
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				continue
			}
			m := map[string]any{}
			for name, p := range props {
				if ps, ok := p.(map[string]any); ok {
					m[name] = reduce(ps)
				} else {
					m[name] = map[string]any{}
				}
			}
			v = m
		case "items":
			is, ok := v.(map[string]any)
			if !ok {
				continue // tuple items
			}
			v = reduce(is)
		}
		out[k] = v
	}
	return out
}
