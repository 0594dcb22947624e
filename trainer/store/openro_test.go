package store

import (
	"bytes"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/readonlytest"
)

// foreignDB writes an SQLite database that is not a store (a table of
// passages, in WAL mode like a search index being built) and returns its
// path and bytes.
func foreignDB(t *testing.T) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "index.db")
	db, err := sql.Open("sqlite3", uri(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"CREATE TABLE passages (title TEXT, text TEXT)", "INSERT INTO passages VALUES ('a', 'b')"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, b
}

// unchanged checks that path holds want and that no file appeared beside it.
func unchanged(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s changed (%v)", path, err)
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("files beside %s: %v, want none", filepath.Base(path), names)
	}
}

// Neither a read-only nor a read-write open touches an SQLite file that is
// not a store: both refuse it with ErrNotAStore.
func TestOpenRefusesForeignFileUnchanged(t *testing.T) {
	path, orig := foreignDB(t)
	if _, err := OpenReadOnly(path); !errors.Is(err, ErrNotAStore) {
		t.Errorf("OpenReadOnly: %v, want ErrNotAStore", err)
	}
	unchanged(t, path, orig)
	if _, _, err := QueryReadOnly(path, "SELECT * FROM passages"); !errors.Is(err, ErrNotAStore) {
		t.Errorf("QueryReadOnly: %v, want ErrNotAStore", err)
	}
	unchanged(t, path, orig)
	if s, err := Open(path); !errors.Is(err, ErrNotAStore) {
		if err == nil {
			s.Close()
		}
		t.Errorf("Open: %v, want ErrNotAStore", err)
	}
	unchanged(t, path, orig)
}

// Reading a store through OpenReadOnly changes nothing, and writing
// through it is refused.
func TestOpenReadOnlyReadsWithoutWriting(t *testing.T) {
	path := writtenStore(t, t.TempDir())
	orig, _ := os.ReadFile(path)
	s, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.List(ListFilter{})
	if err != nil || len(rows) != 3 {
		t.Fatalf("List: %d rows, %v; want 3", len(rows), err)
	}
	if _, err := s.Get(rows[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRun(RunInfo{Name: "other"}); err == nil {
		t.Error("BeginRun on a read-only store succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	unchanged(t, path, orig)
}

// writtenStore writes one run with an iteration of 3 trajectories into
// dir/store.db and closes it cleanly; it returns the path.
func writtenStore(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "store.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRun(RunInfo{Name: "r"}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteIteration(0, nil, synthBatch(0, 3, 150, 2)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// A cleanly closed store can be read in a read-only folder, where SQLite
// cannot create a WAL's shared-memory file. A store whose WAL still holds
// transactions (its writer was killed) is refused there with a message
// that says what to do, never read without them.
func TestReadOnlyFolder(t *testing.T) {
	dir := t.TempDir()
	path := writtenStore(t, dir)
	if _, err := os.Stat(path + "-wal"); err == nil {
		t.Errorf("a cleanly closed store left %s-wal", path)
	}
	// A second store whose writer is still open: its WAL holds the rows.
	dirty := t.TempDir()
	w, err := Open(filepath.Join(dirty, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.BeginRun(RunInfo{Name: "r"}); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteIteration(0, nil, synthBatch(0, 3, 150, 2)); err != nil {
		t.Fatal(err)
	}
	copyDir := t.TempDir()
	for _, f := range []string{"store.db", "store.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dirty, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(copyDir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	readonlytest.Dir(t, dir)
	readonlytest.Dir(t, copyDir)

	s, err := OpenReadOnly(path)
	if err != nil {
		t.Fatalf("read-only folder: %v", err)
	}
	rows, err := s.List(ListFilter{})
	s.Close()
	if err != nil || len(rows) != 3 {
		t.Fatalf("read-only folder: List gave %d rows, %v; want 3", len(rows), err)
	}
	if _, err := OpenReadOnly(filepath.Join(copyDir, "store.db")); err == nil || !strings.Contains(err.Error(), "-wal") {
		t.Errorf("a read-only folder with a non-empty WAL: %v, want an error about the -wal file", err)
	}
}
