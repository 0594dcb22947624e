package config

import (
	"fmt"
	"reflect"
	"slices"

	"gopkg.in/yaml.v3"
)

// decode merges the YAML node n into the key k: a section takes a mapping
// whose keys must all exist, a leaf takes a value of its type. A null
// section is left as it is. root is the whole configuration, searched for
// close matches of an unknown key.
func decode(root reflect.Value, k node, n *yaml.Node) error {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if isSection(k.value.Type()) {
		return decodeSection(root, k, n)
	}
	return decodeLeaf(root, k, n)
}

func decodeSection(root reflect.Value, k node, n *yaml.Node) error {
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return &KeyError{Path: pathOrRoot(k.path), Line: n.Line, Msg: "want a mapping of keys, got " + kindName(n)}
	}
	kids := children(k.value, k.path)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		path := key.Value
		if k.path != "" {
			path = k.path + "." + key.Value
		}
		child, ok := findChild(kids, key.Value)
		if !ok {
			return &KeyError{Path: path, Line: key.Line, Msg: unknownKeyMsg(root, path)}
		}
		if first, dup := seen[key.Value]; dup {
			return &KeyError{Path: path, Line: key.Line, Msg: fmt.Sprintf("given twice (first on line %d)", first)}
		}
		seen[key.Value] = key.Line
		if err := decode(root, child, val); err != nil {
			return err
		}
	}
	return nil
}

func findChild(kids []node, name string) (node, bool) {
	for _, c := range kids {
		if yamlName(c.field) == name {
			return c, true
		}
	}
	return node{}, false
}

// decodeLeaf sets a leaf from a scalar or, for a list, from a sequence of
// scalars or a single scalar (a list of one); an entry list takes a
// sequence of mappings (decodeEntries). Null empties a string or a list
// and is an error for other types.
func decodeLeaf(root reflect.Value, k node, n *yaml.Node) error {
	t := k.value.Type()
	if isEntryList(t) {
		return decodeEntries(root, k, n)
	}
	bad := func(got string) error {
		return &KeyError{Path: k.path, Line: n.Line, Msg: fmt.Sprintf("want %s, got %s", typeArticle(t), got)}
	}
	if isNull(n) {
		switch t.Kind() {
		case reflect.String:
			k.value.SetString("")
			return nil
		case reflect.Slice:
			k.value.Set(reflect.ValueOf([]string{})) // empty, never nil: YAML cannot tell them apart
			return nil
		}
		return bad("null")
	}
	if t.Kind() == reflect.Slice {
		items := []*yaml.Node{n}
		if n.Kind == yaml.SequenceNode {
			items = n.Content
		}
		list := make([]string, 0, len(items))
		for _, it := range items {
			if it.Kind != yaml.ScalarNode || isNull(it) {
				return bad("an item that is " + kindName(it))
			}
			list = append(list, it.Value)
		}
		k.value.Set(reflect.ValueOf(list))
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return bad(kindName(n))
	}
	if !slices.Contains(scalarTags(t), n.ShortTag()) {
		return bad(fmt.Sprintf("%q", n.Value))
	}
	v := reflect.New(t)
	if err := n.Decode(v.Interface()); err != nil {
		return bad(fmt.Sprintf("%q", n.Value))
	}
	k.value.Set(v.Elem())
	return nil
}

// scalarTags lists the resolved YAML tags a leaf of type t accepts, so
// that 2.5 is not truncated into an int nor yes taken for a bool.
func scalarTags(t reflect.Type) []string {
	switch {
	case t == durationType:
		return []string{"!!str"}
	case t.Kind() == reflect.Bool:
		return []string{"!!bool"}
	case t.Kind() == reflect.Int:
		return []string{"!!int"}
	case t.Kind() == reflect.Float64:
		return []string{"!!int", "!!float"}
	}
	return []string{"!!str", "!!int", "!!float", "!!bool", "!!timestamp"} // a string takes any scalar's text
}

func isNull(n *yaml.Node) bool {
	return n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func kindName(n *yaml.Node) string {
	switch {
	case isNull(n):
		return "null"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	}
	return fmt.Sprintf("%q", n.Value)
}

func pathOrRoot(path string) string {
	if path == "" {
		return "(top level)"
	}
	return path
}

// typeName names the type of a key for messages and docs.
func typeName(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.Float64:
		return "float"
	case isEntryList(t):
		return "list of mappings"
	case t.Kind() == reflect.Slice:
		return "list"
	case isSection(t):
		return "section"
	}
	return t.Kind().String()
}

func typeArticle(t reflect.Type) string {
	switch typeName(t) {
	case "int":
		return "an integer"
	case "duration":
		return "a duration such as 5s"
	case "list":
		return "a list of strings"
	}
	return "a " + typeName(t)
}
