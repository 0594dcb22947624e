package search

import (
	"fmt"

	"github.com/agentrl/agentrl/envs"
)

// Config is what the search and lookup tools are built from.
type Config struct {
	Index string // path of an index built by BuildIndex (required)
	K     int    // passages per search, at least 1 (lookup ignores it)
}

// OpenSearch opens c.Index and returns the search tool over it, answering
// with c.K passages. The index stays open for the life of the process.
func OpenSearch(c Config) (envs.Tool, error) {
	if c.K < 1 {
		return nil, fmt.Errorf("%s: k = %d, want a whole number >= 1", SearchName, c.K)
	}
	idx, err := openFor(SearchName, c.Index)
	if err != nil {
		return nil, err
	}
	return NewSearchTool(idx, c.K), nil
}

// OpenLookup opens c.Index and returns the lookup tool over it. The index
// stays open for the life of the process.
func OpenLookup(c Config) (envs.Tool, error) {
	idx, err := openFor(LookupName, c.Index)
	if err != nil {
		return nil, err
	}
	return NewLookupTool(idx), nil
}

// openFor opens the index at path for the named tool.
func openFor(tool, path string) (*Index, error) {
	if path == "" {
		return nil, fmt.Errorf("%s: needs an index, the path of a search index", tool)
	}
	idx, err := Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tool, err)
	}
	return idx, nil
}
