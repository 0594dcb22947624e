package envs

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentrl/agentrl/toolcall"
)

// Validate checks args against the schema. The error lists every problem
// found, each with its location ("arguments.query: ..."), so that the model
// can fix them all in its next call.
func (s *Schema) Validate(args json.RawMessage) error {
	v, err := toolcall.DecodeJSON(args)
	if err != nil {
		return fmt.Errorf("arguments are not valid JSON: %v", err)
	}
	var problems []string
	s.check(v, "arguments", &problems)
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

// check appends to problems what is wrong with v at path.
func (s *Schema) check(v any, path string, problems *[]string) {
	add := func(format string, a ...any) {
		*problems = append(*problems, path+": "+fmt.Sprintf(format, a...))
	}
	if s.Type != "" && !hasType(v, s.Type) {
		add("expected %s, got %s", s.Type, describe(v))
		return
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return jsonEqual(e, v) }) {
		add("%s is not one of %s", describe(v), enumList(s.Enum))
	}
	switch x := v.(type) {
	case string:
		n := utf8.RuneCountInString(x)
		if s.MinLength != nil && n < *s.MinLength {
			add("string of %d characters is shorter than the minimum %d", n, *s.MinLength)
		}
		if s.MaxLength != nil && n > *s.MaxLength {
			add("string of %d characters is longer than the maximum %d", n, *s.MaxLength)
		}
	case json.Number:
		f, err := numberValue(x)
		if err != nil {
			add("%v", err)
			return
		}
		if s.Minimum != nil && f < *s.Minimum {
			add("%s is less than the minimum %v", x, *s.Minimum)
		}
		if s.Maximum != nil && f > *s.Maximum {
			add("%s is greater than the maximum %v", x, *s.Maximum)
		}
	case []any:
		if s.Items != nil {
			for i, item := range x {
				s.Items.check(item, fmt.Sprintf("%s[%d]", path, i), problems)
			}
		}
	case map[string]any:
		s.checkObject(x, path, problems)
	}
}

// checkObject checks required, additional and declared properties, in a
// fixed order so messages are stable.
func (s *Schema) checkObject(obj map[string]any, path string, problems *[]string) {
	for _, r := range s.Required {
		if _, ok := obj[r]; !ok {
			*problems = append(*problems, fmt.Sprintf("%s: missing required property %q", path, r))
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p, declared := s.Properties[k]
		switch {
		case declared:
			p.check(obj[k], path+"."+k, problems)
		case s.NoAdditional:
			*problems = append(*problems, fmt.Sprintf("%s: unexpected property %q (allowed: %s)", path, k, strings.Join(s.propertyNames(), ", ")))
		}
	}
}

func (s *Schema) propertyNames() []string {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// hasType reports whether the decoded JSON value v is of the schema type t.
// An integer is a number written without fraction or exponent, so that a
// tool decoding it into a Go int never fails.
func hasType(v any, t string) bool {
	switch x := v.(type) {
	case map[string]any:
		return t == "object"
	case []any:
		return t == "array"
	case string:
		return t == "string"
	case bool:
		return t == "boolean"
	case json.Number:
		if t == "number" {
			return true
		}
		_, err := strconv.ParseInt(string(x), 10, 64)
		return t == "integer" && err == nil
	}
	return false
}

// describe names the JSON type of v, with its value when short.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string " + toolcall.Quote(x)
	case bool:
		return "boolean " + strconv.FormatBool(x)
	case json.Number:
		return "number " + string(x)
	}
	return fmt.Sprintf("%T", v)
}

func enumList(enum []any) string {
	parts := make([]string, len(enum))
	for i, e := range enum {
		b, _ := json.Marshal(e)
		parts[i] = string(b)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// jsonEqual compares two decoded JSON values; numbers compare by value.
func jsonEqual(a, b any) bool {
	na, okA := a.(json.Number)
	nb, okB := b.(json.Number)
	if okA && okB {
		x, errA := numberValue(na)
		y, errB := numberValue(nb)
		return errA == nil && errB == nil && x == y
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}
