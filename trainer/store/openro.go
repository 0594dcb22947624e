package store

import (
	"cmp"
	"database/sql"
	"errors"
	"fmt"
	"os"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// ErrNotAStore is wrapped by OpenReadOnly's error for an SQLite file that
// is not a trajectory store (a search index, say).
var ErrNotAStore = errors.New("not an agentrl trajectory store (it has no runs table)")

// OlderSchemaError is OpenReadOnly's error (wrapped) for a store an
// older build wrote at schema Version, which Open would migrate.
type OlderSchemaError struct{ Version int }

func (e OlderSchemaError) Error() string {
	return fmt.Sprintf("schema version %d is older than this build's %d, and a read-only open does not migrate: "+
		"migrate it once with `trainer rollouts migrate --store FILE`", e.Version, SchemaVersion())
}

// OpenReadOnly opens an existing store for reading only: nothing is
// created, migrated or changed, and the file stays byte-identical. It is
// how the inspection commands (rollouts list/show, report) open a store.
// A file that is not a store, or whose schema this build cannot read, is
// refused with an error naming it.
//
// A store in WAL mode (one being written, or left by a killed run) is read
// through its WAL when the folder lets SQLite create the shared-memory
// file beside it. Where it cannot (a read-only folder) the file is opened
// immutable, which is exact when no WAL is left over: a clean Close leaves
// none. A WAL with content in a read-only folder cannot be read safely and
// is refused, saying so.
func OpenReadOnly(path string) (*Store, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db, err := openReadOnly(path)
	if err == nil {
		err = checkStore(db)
		if cantOpen(err) {
			db.Close()
			db, err = openImmutable(path)
			if err == nil {
				err = checkStore(db)
			}
		}
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		return nil, fmt.Errorf("open store %s read-only: %w", path, err)
	}
	return &Store{path: path, db: db, ro: db, readOnly: true}, nil
}

// tables reports how many tables db has and whether one is the store's
// runs table: how a store is told from any other SQLite file.
func tables(db *sql.DB) (n int, hasRuns bool, err error) {
	var runs int
	err = db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(name = 'runs'), 0) FROM sqlite_master WHERE type = 'table'`).Scan(&n, &runs)
	return n, runs > 0, err
}

// checkStore checks that db is a store whose schema this build reads.
func checkStore(db *sql.DB) error {
	if _, hasRuns, err := tables(db); err != nil || !hasRuns {
		return cmp.Or(err, ErrNotAStore)
	}
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return err
	}
	switch {
	case v > SchemaVersion():
		return fmt.Errorf("schema version %d is newer than this build's %d: read it with a newer agentrl", v, SchemaVersion())
	case v < SchemaVersion():
		return OlderSchemaError{Version: v}
	}
	return nil
}

// cantOpen reports SQLite's "unable to open" error: in a read-only open of
// a WAL database, the shared-memory file could not be created.
func cantOpen(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrCantOpen
}

// openImmutable opens path with immutable=1: SQLite reads the file alone,
// without locks, WAL or shared memory. That is only exact when no WAL
// holds committed transactions, so a non-empty -wal file is refused.
func openImmutable(path string) (*sql.DB, error) {
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("its write-ahead log %s-wal holds transactions not yet in the database, and the folder is read-only "+
			"(SQLite cannot create %s-shm to read them): copy the store and its -wal file to a writable folder", path, path)
	}
	return sql.Open(readOnlyDriver, uri(path)+"?mode=ro&immutable=1&_query_only=1")
}
