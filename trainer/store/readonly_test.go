package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

func TestQueryReadOnlyRefusesWrites(t *testing.T) {
	s := openTemp(t)
	if err := s.BeginRun(RunInfo{Name: "ro"}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteIteration(0, nil, synthBatch(0, 3, 150, 2)); err != nil {
		t.Fatal(err)
	}
	path := s.Path()
	dir := filepath.Dir(path)
	cols, rows, err := QueryReadOnly(path, "SELECT split, COUNT(*) AS n FROM trajectories WHERE iteration = ? GROUP BY split", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(cols) != 2 || cols[1] != "n" || len(rows) != 1 || rows[0][0] != "train" || rows[0][1] != int64(3) {
		t.Fatalf("read query: %v %v", cols, rows)
	}
	for _, q := range []string{
		"INSERT INTO runs (name, config, git_rev, started_at) VALUES ('x', '{}', '', '')",
		"UPDATE trajectories SET reward = 0",
		"DELETE FROM trajectories",
		"DROP TABLE turns",
		"CREATE TABLE evil (x)",
		"PRAGMA user_version = 7",
		"PRAGMA query_only = 0",
		"ATTACH '" + filepath.Join(dir, "other.db") + "' AS other",
		"ATTACH 'file:" + filepath.Join(dir, "other.db") + "?mode=rwc' AS other",
		"VACUUM INTO '" + filepath.Join(dir, "copy.db") + "'",
		"SELECT 1; DELETE FROM trajectories",
	} {
		if _, _, err := QueryReadOnly(path, q); !errors.Is(err, ErrReadOnly) {
			t.Errorf("%s: %v; want ErrReadOnly", q, err)
		}
	}
	// Nothing changed and no file was created beside the store.
	var n int
	if err := s.db.QueryRow("SELECT COUNT(*) FROM trajectories").Scan(&n); err != nil || n != 3 {
		t.Errorf("trajectories after refused writes: %d, %v; want 3", n, err)
	}
	for _, f := range []string{"other.db", "copy.db"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s was created", f)
		}
	}
	if _, _, err := QueryReadOnly(filepath.Join(dir, "missing.db"), "SELECT 1"); err == nil {
		t.Error("querying a missing store must fail, not create it")
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); err == nil {
		t.Error("missing.db was created")
	}
}

func TestListWhereIsReadOnly(t *testing.T) {
	s := openTemp(t)
	if err := s.BeginRun(RunInfo{Name: "l"}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteIteration(0, nil, synthBatch(0, 2, 150, 1)); err != nil {
		t.Fatal(err)
	}
	_, err := s.List(ListFilter{Split: trajectory.Train, Where: "1); DELETE FROM trajectories; SELECT (1"})
	if !errors.Is(err, ErrReadOnly) {
		t.Errorf("List with a writing Where: %v; want ErrReadOnly", err)
	}
	if got, err := s.List(ListFilter{}); err != nil || len(got) != 2 {
		t.Errorf("after the refused Where: %d trajectories, %v; want 2", len(got), err)
	}
}
