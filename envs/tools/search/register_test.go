package search

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

func TestRegisteredTools(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zoo.db")
	if err := BuildIndex(context.Background(), path, zoo, nil); err != nil {
		t.Fatal(err)
	}
	// k arrives as float64 from JSON and int from YAML.
	tools, err := envs.Build([]string{"search", "lookup"}, map[string]map[string]any{
		"search": {"index": path, "k": float64(1)},
		"lookup": {"index": path},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := tools[0].Call(context.Background(), json.RawMessage(`{"query": "fox jumps"}`))
	if err != nil || r.Content != "Doc 1 (Title: Beta) blue fox jumps" || !slices.Equal(r.Refs, []string{"Beta"}) {
		t.Errorf("search with k = 1: %+v, %v", r, err)
	}
	if r, err := tools[1].Call(context.Background(), json.RawMessage(`{"title": "Delta"}`)); err != nil || !r.OK {
		t.Errorf("lookup: %+v, %v", r, err)
	}
	for _, c := range []struct {
		cfg  map[string]any
		want string
	}{
		{nil, `needs "index"`},
		{map[string]any{"index": path, "k": 0}, `"k" = 0`},
		{map[string]any{"index": path, "k": 2.5}, `"k" = 2.5`},
		{map[string]any{"index": path, "top": 3}, `unknown configuration key "top"`},
		{map[string]any{"index": filepath.Join(t.TempDir(), "absent.db")}, "absent.db"},
	} {
		if _, err := envs.Build([]string{"search"}, map[string]map[string]any{"search": c.cfg}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config %v: err = %v, want %q", c.cfg, err, c.want)
		}
	}
	if _, err := envs.Build([]string{"lookup"}, map[string]map[string]any{"lookup": {"index": path, "k": 3}}); err == nil || !strings.Contains(err.Error(), `unknown configuration key "k"`) {
		t.Errorf("lookup with k: err = %v", err)
	}
}
