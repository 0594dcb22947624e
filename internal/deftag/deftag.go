// Package deftag sets a struct's fields from their `default:"..."` tags,
// so that a domain struct (envs.EnvConfig, reward.Config, ...) can carry
// its one default next to its field, read both by its own DefaultX
// function and by the trainer's configuration (trainer/config), which
// embeds the struct and documents the same tags.
//
// A tag holds a YAML scalar or flow list, as a --set value of the trainer
// does: 4, 0.1, em, 5s, true, [a, b]. A nested struct (not a
// time.Duration) is a section whose fields are set in turn; a field
// tagged yaml:"-" is skipped.
package deftag

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

var durationType = reflect.TypeFor[time.Duration]()

// Apply sets every leaf field under the struct *ptr from its default tag.
// A leaf without a default tag is an error naming it.
func Apply(ptr any) error {
	v := reflect.ValueOf(ptr)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("deftag: want a pointer to a struct, got %T", ptr)
	}
	return apply(v.Elem(), "")
}

// MustApply is Apply for tags that are source code: a bad tag is a
// programming error, like a bad regexp.MustCompile pattern.
func MustApply(ptr any) {
	if err := Apply(ptr); err != nil {
		panic(err)
	}
}

func apply(v reflect.Value, prefix string) error {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if prefix != "" {
			name = prefix + "." + name
		}
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			if err := apply(v.Field(i), name); err != nil {
				return err
			}
			continue
		}
		tag, ok := f.Tag.Lookup("default")
		if !ok {
			return fmt.Errorf("deftag: key %s has no default tag", name)
		}
		p := reflect.New(f.Type)
		if err := yaml.Unmarshal([]byte(tag), p.Interface()); err != nil {
			return fmt.Errorf("deftag: default of %s (%q): %w", name, tag, err)
		}
		if f.Type.Kind() == reflect.Slice && p.Elem().IsNil() {
			p.Elem().Set(reflect.MakeSlice(f.Type, 0, 0)) // empty, never nil, as the trainer's config decodes it
		}
		v.Field(i).Set(p.Elem())
	}
	return nil
}
