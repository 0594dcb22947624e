package store

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// A store written at schema 5 (before per-turn policy versions and
// dynamic sampling) opens with this build: its turns take their
// trajectory's policy version (the synchronous loop sampled every turn of
// an episode with one policy) and its trajectories were dropped by
// nothing.
func TestMigrateV5KeepsOldStoresReadable(t *testing.T) {
	path := storeAtVersion(t, 5,
		`INSERT INTO runs (name, config, git_rev, started_at) VALUES ('r', '{}', '', '2026-01-01T00:00:00.000Z')`,
		`INSERT INTO iterations (run, iteration, metrics, created_at) VALUES ('r', 3, '{}', '2026-01-01T00:00:00.000Z')`,
		`INSERT INTO trajectories (run, id, iteration, split, task_id, dataset, hops, group_idx, sample_idx, policy_version,
			question, answer, correct, stop, truncated, error, prompt_tokens, total_tokens, action_tokens, n_turns)
			VALUES ('r', '3-train-0-0', 3, 'train', 'q', 'd', 1, 0, 0, 7, 'q?', 'a', 1, 'answer', 0, '', 2, 5, 3, 2)`,
		`INSERT INTO turns (tid, turn, text, gen_tokens) VALUES (1, 0, 'x', 1), (1, 1, 'y', 2)`)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	trs, err := s.LoadIteration(3, trajectory.Train)
	if err != nil {
		t.Fatal(err)
	}
	if len(trs) != 1 || len(trs[0].Turns) != 2 {
		t.Fatalf("read back %d trajectories, want one with 2 turns", len(trs))
	}
	tr := trs[0]
	if tr.Dropped != "" || tr.Turns[0].PolicyVersion != 7 || tr.Turns[1].PolicyVersion != 7 {
		t.Errorf("dropped %q, turn versions %d %d; want '' and 7 7", tr.Dropped, tr.Turns[0].PolicyVersion, tr.Turns[1].PolicyVersion)
	}
}

// storeAtVersion writes a store at schema version (the first version
// migrations) in a temporary folder of t, runs queries on it, and returns
// its path.
func storeAtVersion(t *testing.T, version int, queries ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("v%d.db", version))
	db, err := sql.Open("sqlite3", uri(path)+"?"+rwParams)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := migrate(db, migrations[:version]); err != nil {
		t.Fatal(err)
	}
	for _, q := range queries {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return path
}
