package config

import (
	"fmt"
	"reflect"
)

// Default returns the built-in configuration: the CPU demo job (a tiny
// model trained with GRPO on the synthetic multi-hop world), read from the
// default tags of the structs.
func Default() Config {
	var c Config
	if err := applyDefaults(&c); err != nil {
		// The tags are source code, checked by the tests: a bad one is a
		// programming error, like a bad regexp.MustCompile pattern.
		panic(err)
	}
	return c
}

// applyDefaults sets every leaf of c from its default tag, parsed as a
// --set value is.
func applyDefaults(c *Config) error {
	root := reflect.ValueOf(c).Elem()
	for _, k := range leaves(root, "") {
		tag, ok := k.field.Tag.Lookup("default")
		if !ok {
			return fmt.Errorf("config: key %s has no default tag", k.path)
		}
		if err := setValue(root, k, tag); err != nil {
			return fmt.Errorf("config: default of %s: %w", k.path, err)
		}
	}
	return nil
}
