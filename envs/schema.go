package envs

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/agentrl/agentrl/toolcall"
)

// Schema is a compiled JSON schema of the subset tools use to describe
// their parameters: type (object, string, integer, number, boolean, array),
// properties, required, enum, additionalProperties (true or false),
// minLength/maxLength, minimum/maximum and items. Annotations (description,
// title, default, examples, $schema) are accepted and ignored; any other
// keyword is refused when compiling, so a schema never promises a check
// that is not made.
type Schema struct {
	Type                 string             // "" accepts any type
	Properties           map[string]*Schema // for objects
	Required             []string           // for objects
	NoAdditional         bool               // additionalProperties: false
	Enum                 []any              // allowed values, decoded with json.Number
	MinLength, MaxLength *int               // for strings, in characters
	Minimum, Maximum     *float64           // for integers and numbers
	Items                *Schema            // for arrays
}

var schemaTypes = []string{"object", "string", "integer", "number", "boolean", "array"}

var schemaAnnotations = []string{"description", "title", "default", "examples", "$schema"}

// CompileSchema parses a JSON schema. The error names the location of the
// offending keyword, e.g. "properties.query.maxLength".
func CompileSchema(raw json.RawMessage) (*Schema, error) {
	return compileSchema(raw, "schema")
}

// compileParameters compiles a tool's parameters schema, which must
// describe an object.
func compileParameters(raw json.RawMessage) (*Schema, error) {
	s, err := CompileSchema(raw)
	if err != nil {
		return nil, err
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("schema: parameters must have type \"object\", got %q", s.Type)
	}
	return s, nil
}

func compileSchema(raw json.RawMessage, at string) (*Schema, error) {
	var kw map[string]json.RawMessage
	if err := json.Unmarshal(raw, &kw); err != nil || kw == nil {
		return nil, fmt.Errorf("%s: not a JSON object: %s", at, toolcall.Quote(string(raw)))
	}
	s := &Schema{}
	keys := make([]string, 0, len(kw))
	for k := range kw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := s.compileKeyword(k, kw[k], at); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// compileKeyword sets the field of one keyword.
func (s *Schema) compileKeyword(k string, v json.RawMessage, at string) error {
	where := at + "." + k
	switch k {
	case "type":
		if err := json.Unmarshal(v, &s.Type); err != nil || !slices.Contains(schemaTypes, s.Type) {
			return fmt.Errorf("%s: want one of %v, got %s", where, schemaTypes, toolcall.Quote(string(v)))
		}
	case "properties":
		var props map[string]json.RawMessage
		if err := json.Unmarshal(v, &props); err != nil || props == nil {
			return fmt.Errorf("%s: want an object of schemas, got %s", where, toolcall.Quote(string(v)))
		}
		s.Properties = make(map[string]*Schema, len(props))
		for name, p := range props {
			ps, err := compileSchema(p, where+"."+name)
			if err != nil {
				return err
			}
			s.Properties[name] = ps
		}
	case "required":
		if err := json.Unmarshal(v, &s.Required); err != nil {
			return fmt.Errorf("%s: want an array of strings, got %s", where, toolcall.Quote(string(v)))
		}
	case "additionalProperties":
		var allowed bool
		if err := json.Unmarshal(v, &allowed); err != nil {
			return fmt.Errorf("%s: only true or false is supported, got %s", where, toolcall.Quote(string(v)))
		}
		s.NoAdditional = !allowed
	case "enum":
		vals, err := toolcall.DecodeJSON(v)
		list, ok := vals.([]any)
		if err != nil || !ok || len(list) == 0 {
			return fmt.Errorf("%s: want a non-empty array, got %s", where, toolcall.Quote(string(v)))
		}
		s.Enum = list
	case "minLength", "maxLength":
		var n int
		if err := json.Unmarshal(v, &n); err != nil || n < 0 {
			return fmt.Errorf("%s: want a non-negative integer, got %s", where, toolcall.Quote(string(v)))
		}
		if k == "minLength" {
			s.MinLength = &n
		} else {
			s.MaxLength = &n
		}
	case "minimum", "maximum":
		var x float64
		if err := json.Unmarshal(v, &x); err != nil {
			return fmt.Errorf("%s: want a number, got %s", where, toolcall.Quote(string(v)))
		}
		if k == "minimum" {
			s.Minimum = &x
		} else {
			s.Maximum = &x
		}
	case "items":
		items, err := compileSchema(v, where)
		if err != nil {
			return err
		}
		s.Items = items
	default:
		if !slices.Contains(schemaAnnotations, k) {
			return fmt.Errorf("%s: unsupported schema keyword", where)
		}
	}
	return nil
}

// numberValue converts a JSON number to float64, refusing values out of
// float64 range.
func numberValue(n json.Number) (float64, error) {
	x, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsInf(x, 0) {
		return 0, fmt.Errorf("number %s is out of range", n)
	}
	return x, nil
}
