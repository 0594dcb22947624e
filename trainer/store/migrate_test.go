package store

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenCreatesVersionedWALStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs", "a", "store.db") // runs/a does not exist yet
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int
	var mode string
	if err := s.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if v != SchemaVersion() || SchemaVersion() != len(migrations) || mode != "wal" {
		t.Errorf("user_version %d, SchemaVersion %d, journal_mode %q; want %d, %d, wal", v, SchemaVersion(), mode, len(migrations), len(migrations))
	}
	// Reopening an up-to-date store applies nothing and succeeds.
	s2, err := Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	s2.Close()
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(path)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("schema version 99 is newer than this build's %d", SchemaVersion())) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open of a version-99 store: %v; want an error naming the path and both versions", err)
	}
}

func TestMigrateAppliesPendingStepsInOrder(t *testing.T) {
	db, err := sql.Open("sqlite3", uri(filepath.Join(t.TempDir(), "m.db"))+"?"+rwParams)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	steps := []string{
		"CREATE TABLE a (x INTEGER); INSERT INTO a VALUES (1)",
		"ALTER TABLE a ADD COLUMN y INTEGER DEFAULT 7",
		"UPDATE a SET x = x + 10",
	}
	if err := migrate(db, steps[:1]); err != nil {
		t.Fatal(err)
	}
	// A later build knows two more steps: only those run, in order, so
	// x = 1 + 10 once (not twice) and y exists with its default.
	if err := migrate(db, steps); err != nil {
		t.Fatal(err)
	}
	var v, x, y int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT x, y FROM a").Scan(&x, &y); err != nil {
		t.Fatal(err)
	}
	if v != 3 || x != 11 || y != 7 {
		t.Errorf("version %d, x %d, y %d; want 3, 11, 7", v, x, y)
	}
}

func TestMigrateFailedStepLeavesPreviousVersion(t *testing.T) {
	db, err := sql.Open("sqlite3", uri(filepath.Join(t.TempDir(), "m.db"))+"?"+rwParams)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	steps := []string{"CREATE TABLE a (x)", "CREATE TABLE b (x); CREATE TABLE a (y)"} // step 2 fails half way
	if err := migrate(db, steps); err == nil || !strings.Contains(err.Error(), "migrate to version 2") {
		t.Fatalf("migrate: %v; want an error naming version 2", err)
	}
	var v, b int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT COUNT(*) FROM sqlite_master WHERE name = 'b'").Scan(&b); err != nil {
		t.Fatal(err)
	}
	if v != 1 || b != 0 {
		t.Errorf("after a failed step: version %d, table b exists %d; want 1, 0 (the step rolled back whole)", v, b)
	}
}

func TestOpenPathWithURICharacters(t *testing.T) {
	// '?', '#' and '%' mean something in an SQLite URI; the store must
	// still open the file the path names.
	dir := filepath.Join(t.TempDir(), "run?x=1#frag%20")
	path := filepath.Join(dir, "store.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRun(RunInfo{Name: "u"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the store is not at the path given: %v", err)
	}
	if _, rows, err := QueryReadOnly(path, "SELECT name FROM runs"); err != nil || len(rows) != 1 || rows[0][0] != "u" {
		t.Errorf("QueryReadOnly on the same path: %v, %v", rows, err)
	}
}
