package search

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

func init() {
	envs.Register(SearchName, NewSearchFromConfig)
	envs.Register(LookupName, NewLookupFromConfig)
}

// NewSearchFromConfig is the registry factory of the search tool. Its
// configuration: "index" (path of an index built by BuildIndex, required)
// and "k" (passages per call, default DefaultK). The index stays open for
// the life of the process.
func NewSearchFromConfig(cfg map[string]any) (envs.Tool, error) {
	idx, k, err := fromConfig(SearchName, cfg, true)
	if err != nil {
		return nil, err
	}
	return NewSearchTool(idx, k), nil
}

// NewLookupFromConfig is the registry factory of the lookup tool. Its
// configuration: "index" (required). The index stays open for the life of
// the process.
func NewLookupFromConfig(cfg map[string]any) (envs.Tool, error) {
	idx, _, err := fromConfig(LookupName, cfg, false)
	if err != nil {
		return nil, err
	}
	return NewLookupTool(idx), nil
}

// fromConfig opens the configured index and reads k (when allowed).
func fromConfig(tool string, cfg map[string]any, withK bool) (*Index, int, error) {
	known := []string{"index"}
	if withK {
		known = append(known, "k")
	}
	for key := range cfg {
		if !slices.Contains(known, key) {
			return nil, 0, fmt.Errorf("%s: unknown configuration key %q (known: %s)", tool, key, strings.Join(known, ", "))
		}
	}
	path, ok := cfg["index"].(string)
	if !ok || path == "" {
		return nil, 0, fmt.Errorf(`%s: configuration needs "index", the path of a search index`, tool)
	}
	k := DefaultK
	if v, set := cfg["k"]; set {
		n, ok := wholeNumber(v)
		if !ok || n < 1 {
			return nil, 0, fmt.Errorf(`%s: "k" = %v, want a whole number >= 1`, tool, v)
		}
		k = n
	}
	idx, err := Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", tool, err)
	}
	return idx, k, nil
}

// wholeNumber accepts the integer forms YAML and JSON decoding produce.
func wholeNumber(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), true
	case float64:
		if n == math.Trunc(n) && math.Abs(n) < 1<<31 {
			return int(n), true
		}
	}
	return 0, false
}
