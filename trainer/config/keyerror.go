package config

import "fmt"

// KeyError is a problem with one key of a configuration: unknown, of the
// wrong type or out of range. Line is the line of the YAML file where the
// key or its value is, 0 when the value did not come from a file.
type KeyError struct {
	Path string // dotted path of the key, e.g. "algorithm.clip_high"
	Line int    // 1-based line in the YAML file, or 0
	Msg  string // what is wrong
}

// Error gives "line 12: algorithm.clip_high: want a float, got "abc"", or
// the same without the line when there is none.
func (e *KeyError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s", e.Line, e.Path, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.Path, e.Msg)
}
