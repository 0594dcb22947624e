package search

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestOpenTools(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zoo.db")
	if err := BuildIndex(context.Background(), path, zoo, nil); err != nil {
		t.Fatal(err)
	}
	search, err := OpenSearch(Config{Index: path, K: 1})
	if err != nil {
		t.Fatal(err)
	}
	r, err := search.Call(context.Background(), json.RawMessage(`{"query": "fox jumps"}`))
	if err != nil || r.Content != "Doc 1 (Title: Beta) blue fox jumps" || !slices.Equal(r.Refs, []string{"Beta"}) {
		t.Errorf("search with k = 1: %+v, %v", r, err)
	}
	lookup, err := OpenLookup(Config{Index: path})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := lookup.Call(context.Background(), json.RawMessage(`{"title": "Delta"}`)); err != nil || !r.OK {
		t.Errorf("lookup: %+v, %v", r, err)
	}
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{K: 2}, "search: needs an index"},
		{Config{Index: path, K: 0}, "search: k = 0"},
		{Config{Index: filepath.Join(t.TempDir(), "absent.db"), K: 2}, "absent.db"},
	} {
		if _, err := OpenSearch(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("OpenSearch(%+v): err = %v, want %q", c.cfg, err, c.want)
		}
	}
	if _, err := OpenLookup(Config{}); err == nil || !strings.Contains(err.Error(), "lookup: needs an index") {
		t.Errorf("lookup without an index: err = %v", err)
	}
}
