package envs

import (
	"encoding/json"
	"strings"
	"testing"
)

const testSchema = `{
  "type": "object",
  "description": "annotations are accepted",
  "properties": {
    "query": {"type": "string", "minLength": 2, "maxLength": 5, "title": "q"},
    "k":     {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
    "score": {"type": "number", "minimum": -1.5},
    "mode":  {"type": "string", "enum": ["bm25", "exact"]},
    "level": {"enum": [1, 2]},
    "exact": {"type": "boolean"},
    "tags":  {"type": "array", "items": {"type": "string", "maxLength": 3}},
    "opts":  {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
  },
  "required": ["query"],
  "additionalProperties": false
}`

func TestSchemaValidateAccepts(t *testing.T) {
	s, err := CompileSchema(json.RawMessage(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{
		`{"query":"ab"}`,
		`{"query":"abcde","k":1,"score":-1.5,"mode":"exact","level":2.0,"exact":true,"tags":["a","bcd"],"opts":{"x":-4}}`,
		`{"query":"ééé"}`, // three characters, six bytes
		`{"query":"ab","k":10}`,
	} {
		if err := s.Validate(json.RawMessage(args)); err != nil {
			t.Errorf("Validate(%s): %v", args, err)
		}
	}
}

func TestSchemaValidateRejects(t *testing.T) {
	s, err := CompileSchema(json.RawMessage(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ args, want string }{
		{`{}`, `arguments: missing required property "query"`},
		{`{"query":5}`, "arguments.query: expected string, got number 5"},
		{`{"query":"a"}`, "arguments.query: string of 1 characters is shorter than the minimum 2"},
		{`{"query":"abcdef"}`, "arguments.query: string of 6 characters is longer than the maximum 5"},
		{`{"query":"ab","k":2.5}`, "arguments.k: expected integer, got number 2.5"},
		{`{"query":"ab","k":1e1}`, "arguments.k: expected integer, got number 1e1"}, // only plain integers
		{`{"query":"ab","k":0}`, "arguments.k: 0 is less than the minimum 1"},
		{`{"query":"ab","k":11}`, "arguments.k: 11 is greater than the maximum 10"},
		{`{"query":"ab","score":"high"}`, "arguments.score: expected number, got string `high`"},
		{`{"query":"ab","score":1e999}`, "arguments.score: number 1e999 is out of range"},
		{`{"query":"ab","mode":"fuzzy"}`, "arguments.mode: string `fuzzy` is not one of [\"bm25\", \"exact\"]"},
		{`{"query":"ab","level":3}`, "arguments.level: number 3 is not one of [1, 2]"},
		{`{"query":"ab","exact":"yes"}`, "arguments.exact: expected boolean, got string `yes`"},
		{`{"query":"ab","tags":["a","long"]}`, "arguments.tags[1]: string of 4 characters is longer than the maximum 3"},
		{`{"query":"ab","tags":"a"}`, "arguments.tags: expected array, got string `a`"},
		{`{"query":"ab","opts":{}}`, `arguments.opts: missing required property "x"`},
		{`{"query":"ab","opts":{"x":null}}`, "arguments.opts.x: expected integer, got null"},
		{`{"query":"ab","limit":3}`, `arguments: unexpected property "limit" (allowed: exact, k, level, mode, opts, query, score, tags)`},
		{`[1]`, "arguments: expected object, got array"},
		{`{"query":`, "arguments are not valid JSON"},
		// Every problem is listed, in a fixed order: required first, then properties by name.
		{`{"k":0,"exact":1}`, `arguments: missing required property "query"; arguments.exact: expected boolean, got number 1; arguments.k: 0 is less than the minimum 1`},
	}
	for _, c := range cases {
		err := s.Validate(json.RawMessage(c.args))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%s) = %v, want %q", c.args, err, c.want)
		}
	}
}

func TestAdditionalPropertiesAllowedByDefault(t *testing.T) {
	s, err := CompileSchema(json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(json.RawMessage(`{"a":"x","b":1}`)); err != nil {
		t.Errorf("extra property refused without additionalProperties false: %v", err)
	}
}

func TestCompileSchemaErrors(t *testing.T) {
	cases := []struct{ schema, want string }{
		{`{"type":"object","properties":{"q":{"type":"string","pattern":"^a"}}}`, "schema.properties.q.pattern: unsupported schema keyword"},
		{`{"type":"object","oneOf":[]}`, "schema.oneOf: unsupported schema keyword"},
		{`{"type":"text"}`, "schema.type: want one of"},
		{`{"type":["string","null"]}`, "schema.type: want one of"},
		{`{"type":"object","properties":[]}`, "schema.properties: want an object of schemas"},
		{`{"type":"object","required":"q"}`, "schema.required: want an array of strings"},
		{`{"type":"object","additionalProperties":{"type":"string"}}`, "schema.additionalProperties: only true or false"},
		{`{"type":"string","enum":[]}`, "schema.enum: want a non-empty array"},
		{`{"type":"string","minLength":-1}`, "schema.minLength: want a non-negative integer"},
		{`{"type":"number","maximum":"10"}`, "schema.maximum: want a number"},
		{`{"type":"array","items":5}`, "schema.items: not a JSON object"},
		{`"object"`, "schema: not a JSON object"},
		{`{"type":`, "schema: not a JSON object"},
	}
	for _, c := range cases {
		_, err := CompileSchema(json.RawMessage(c.schema))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CompileSchema(%s) = %v, want %q", c.schema, err, c.want)
		}
	}
	if _, err := compileParameters(json.RawMessage(`{"type":"string"}`)); err == nil ||
		!strings.Contains(err.Error(), `must have type "object"`) {
		t.Errorf("parameters of type string: err = %v", err)
	}
}
