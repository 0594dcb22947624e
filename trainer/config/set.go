package config

import (
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// Set applies one "key=value" override, as given to --set: key is a
// dotted path (algorithm.clip_high) and value is YAML, a scalar (0.3,
// cpu, 5s, true) or a flow list ([a.jsonl, b.jsonl]); a section takes a
// flow mapping ({hidden: 64, layers: 1}). An empty value empties a string
// or list. An unknown key is an error listing close matches; on any error
// c is left unchanged.
func (c *Config) Set(expr string) error {
	key, value, ok := strings.Cut(expr, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return fmt.Errorf("set %q: want key=value, e.g. algorithm.clip_high=0.3", expr)
	}
	next := *c // lists are replaced, never modified in place: a shallow copy suffices
	root := reflect.ValueOf(&next).Elem()
	k, found := lookup(root, key)
	if !found {
		return fmt.Errorf("set %q: %w", expr, &KeyError{Path: key, Msg: unknownKeyMsg(root, key)})
	}
	if err := setValue(root, k, value); err != nil {
		return fmt.Errorf("set %q: %w", expr, err)
	}
	*c = next
	return nil
}

// setValue parses value as a YAML document and merges it into the key k.
func setValue(root reflect.Value, k node, value string) error {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(value), &doc); err != nil {
		return &KeyError{Path: k.path, Msg: fmt.Sprintf("value %q is not YAML: %v", value, err)}
	}
	n := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		n = doc.Content[0]
	}
	if err := decode(root, k, n); err != nil {
		if ke, ok := err.(*KeyError); ok {
			ke.Line = 0 // a line of the value, not of a file
		}
		return err
	}
	return nil
}
