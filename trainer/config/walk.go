package config

import (
	"reflect"
	"slices"
	"strings"
	"time"
)

var durationType = reflect.TypeFor[time.Duration]()

// node is one key of the configuration tree: a section (a struct) or a
// leaf (a scalar, a list of strings or an entry list).
type node struct {
	path  string              // dotted path, e.g. "algorithm.clip_high"
	value reflect.Value       // addressable value of the key
	field reflect.StructField // the struct field declaring the key
}

// isSection reports whether a key of type t holds other keys.
func isSection(t reflect.Type) bool {
	return t.Kind() == reflect.Struct && t != durationType
}

// children lists the keys directly under the section v, in declaration
// order, with paths prefixed by prefix ("" at the root). A field tagged
// yaml:"-" (wiring of a domain struct, such as envs.EnvConfig.External)
// is no key.
func children(v reflect.Value, prefix string) []node {
	t := v.Type()
	out := make([]node, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name := yamlName(f)
		if name == "-" {
			continue
		}
		if isInline(f) {
			out = append(out, children(v.Field(i), prefix)...)
			continue
		}
		if prefix != "" {
			name = prefix + "." + name
		}
		out = append(out, node{path: name, value: v.Field(i), field: f})
	}
	return out
}

// leaves lists every leaf key under the section v, depth first in
// declaration order.
func leaves(v reflect.Value, prefix string) []node {
	var out []node
	for _, c := range children(v, prefix) {
		if isSection(c.value.Type()) {
			out = append(out, leaves(c.value, c.path)...)
			continue
		}
		out = append(out, c)
	}
	return out
}

// lookup finds the key (section or leaf) at a dotted path under the
// section v.
func lookup(v reflect.Value, path string) (node, bool) {
	var found node
	prefix := ""
	for _, name := range strings.Split(path, ".") {
		if !isSection(v.Type()) {
			return node{}, false
		}
		ok := false
		for _, c := range children(v, prefix) {
			if yamlName(c.field) == name {
				found, v, prefix, ok = c, c.value, c.path, true
				break
			}
		}
		if !ok {
			return node{}, false
		}
	}
	return found, true
}

// allPaths lists the dotted paths of every key, sections included, for
// suggesting a close match to a misspelt key.
func allPaths(v reflect.Value, prefix string) []string {
	var out []string
	for _, c := range children(v, prefix) {
		out = append(out, c.path)
		if isSection(c.value.Type()) {
			out = append(out, allPaths(c.value, c.path)...)
		}
	}
	return out
}

// isInline reports whether f is a struct tagged yaml:",inline", whose keys
// are keys of the section holding it (algorithm inlines algo.Options).
func isInline(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return f.Type.Kind() == reflect.Struct && slices.Contains(strings.Split(opts, ","), "inline")
}

// yamlName is the key of a struct field: the name in its yaml tag.
func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}
