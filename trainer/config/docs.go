package config

import (
	"reflect"
	"strings"
)

// KeyDoc documents one leaf key.
type KeyDoc struct {
	Path    string // dotted path, e.g. "algorithm.clip_high"
	Type    string // string, bool, int, float, duration or list
	Default string // the default as YAML ("" shown as `""`)
	Doc     string // one-line description, allowed values appended
}

// Docs documents every leaf key in file order, for `config print` and the
// configuration table (docs/configuration.md); an entry list is followed
// by the keys of its entries ("tools.mcp[].name").
func Docs() []KeyDoc {
	c := Default()
	var out []KeyDoc
	for _, k := range leaves(reflect.ValueOf(&c).Elem(), "") {
		out = append(out, keyDoc(k))
		if isEntryList(k.value.Type()) {
			out = append(out, entryDocs(k)...)
		}
	}
	return out
}

// keyDoc documents the leaf k.
func keyDoc(k node) KeyDoc {
	def := k.field.Tag.Get("default")
	if def == "" {
		def = `""`
	}
	doc := k.field.Tag.Get("doc")
	if e := enumOf(k.field); e != nil {
		doc += " (one of " + strings.Join(e, ", ") + ")"
	}
	return KeyDoc{Path: k.path, Type: typeName(k.value.Type()), Default: def, Doc: doc}
}

// MarkdownTable renders Docs as a Markdown table with columns key, type,
// default and description.
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| key | type | default | description |\n|---|---|---|---|\n")
	esc := strings.NewReplacer("|", `\|`)
	for _, d := range Docs() {
		b.WriteString("| `" + d.Path + "` | " + d.Type + " | `" + esc.Replace(d.Default) + "` | " + esc.Replace(d.Doc) + " |\n")
	}
	return b.String()
}

// enumOf lists the allowed values of a key with an enum tag, or nil.
func enumOf(f reflect.StructField) []string {
	tag, ok := f.Tag.Lookup("enum")
	if !ok {
		return nil
	}
	return strings.Split(tag, "|")
}
