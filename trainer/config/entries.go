package config

import (
	"fmt"
	"reflect"

	"gopkg.in/yaml.v3"
)

// An entry list is a leaf holding a list of mappings (tools.mcp,
// tools.http): each entry is a struct whose fields carry default and doc
// tags like sections' keys do. In YAML it is a sequence of mappings; on
// the command line, a flow list ([{name: a, url: "http://..."}]).

// isEntryList reports whether a leaf of type t is a list of mappings.
func isEntryList(t reflect.Type) bool {
	return t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct
}

// decodeEntries sets an entry list from a sequence of mappings, each
// entry starting from its defaults. Null empties the list.
func decodeEntries(root reflect.Value, k node, n *yaml.Node) error {
	t := k.value.Type()
	list := reflect.MakeSlice(t, 0, len(n.Content))
	if !isNull(n) {
		if n.Kind != yaml.SequenceNode {
			return &KeyError{Path: k.path, Line: n.Line, Msg: "want a list of mappings, got " + kindName(n)}
		}
		for i, item := range n.Content {
			entry := reflect.New(t.Elem()).Elem()
			path := fmt.Sprintf("%s[%d]", k.path, i)
			if err := entryDefaults(entry, path); err != nil {
				return err
			}
			if isNull(item) || item.Kind != yaml.MappingNode {
				return &KeyError{Path: path, Line: item.Line, Msg: "want a mapping of keys, got " + kindName(item)}
			}
			if err := decodeSection(root, node{path: path, value: entry, field: k.field}, item); err != nil {
				return err
			}
			list = reflect.Append(list, entry)
		}
	}
	k.value.Set(list)
	return nil
}

// entryDefaults sets every key of one entry from its default tag.
func entryDefaults(entry reflect.Value, path string) error {
	for _, k := range leaves(entry, path) {
		tag, ok := k.field.Tag.Lookup("default")
		if !ok {
			return fmt.Errorf("config: key %s has no default tag", k.path)
		}
		if err := setValue(entry, k, tag); err != nil {
			return fmt.Errorf("config: default of %s: %w", k.path, err)
		}
	}
	return nil
}

// entryDocs documents the keys of an entry list's entries, as
// "<list>[].<key>".
func entryDocs(k node) []KeyDoc {
	entry := reflect.New(k.value.Type().Elem()).Elem()
	var out []KeyDoc
	for _, e := range leaves(entry, k.path+"[]") {
		out = append(out, keyDoc(e))
	}
	return out
}
