package store

import (
	"path/filepath"
	"strings"
	"testing"
)

// The indexes of schema version 4 serve the queries they were added for:
// the trajectories that called a tool, and a run's trajectories by reward.
func TestInspectIndexesUsed(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct{ query, index string }{
		{"SELECT tid FROM tool_calls WHERE tool = 'search'", "tool_calls_by_tool"},
		{"SELECT MIN(tool) FROM tool_calls WHERE tool > 'search'", "tool_calls_by_tool"},
		{"SELECT tid FROM trajectories WHERE run = 'x' ORDER BY reward DESC LIMIT 50", "trajectories_by_reward"},
	} {
		rows, err := s.db.Query("EXPLAIN QUERY PLAN " + c.query)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if p := strings.Join(plan, "; "); !strings.Contains(p, c.index) {
			t.Errorf("%s: plan %q does not use %s", c.query, p, c.index)
		}
	}
}
