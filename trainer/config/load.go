package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"

	"gopkg.in/yaml.v3"
)

// Load reads the YAML file at path over the defaults. An unknown key, a
// value of the wrong type or a second YAML document is an error naming the
// file, the line and the key's dotted path. Load does not validate ranges:
// call Validate once every override is applied.
func Load(path string) (Config, error) {
	c := Default()
	if err := c.Merge(path); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Merge reads the YAML file at path over c, with Load's errors; on error c
// is left unchanged.
func (c *Config) Merge(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("load config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("load %s: %w", path, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return fmt.Errorf("load %s: want one YAML document, found more (line %d)", path, extra.Line)
	}
	next := *c // lists are replaced, never modified in place: a shallow copy suffices
	root := reflect.ValueOf(&next).Elem()
	n := &doc
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		n = doc.Content[0]
	}
	if err := decode(root, node{value: root}, n); err != nil {
		var ke *KeyError
		if errors.As(err, &ke) && ke.Line > 0 {
			return fmt.Errorf("load %s %w", path, err) // "load f.yaml line 3: key: ..."
		}
		return fmt.Errorf("load %s: %w", path, err)
	}
	*c = next
	return nil
}
