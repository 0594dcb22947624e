package config

import (
	"bytes"
	"fmt"

	"gopkg.in/yaml.v3"
)

// YAML renders the configuration as a YAML file that Load reads back to
// the same Config: the effective configuration printed at the start of a
// run and saved with it.
func (c Config) YAML() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		return nil, fmt.Errorf("render config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("render config: %w", err)
	}
	return b.Bytes(), nil
}
