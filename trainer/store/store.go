// Package store persists trajectories, per-iteration metrics and run
// metadata in one SQLite database per run (runs/<name>/store.db), so a user
// can answer questions about training with SQL and an update can be re-run
// offline from the store alone. Writes are batched per iteration in one
// transaction; the schema is documented in SCHEMA.md.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	_ "github.com/mattn/go-sqlite3" // the "sqlite3" database/sql driver
)

// ErrNotFound is returned (wrapped) when a trajectory does not exist.
var ErrNotFound = errors.New("not found")

// Store is an open trajectory store. Its methods are safe for concurrent use.
type Store struct {
	path     string
	db       *sql.DB // read-write: writes and the store's own reads (the read-only handle in a read-only Store)
	ro       *sql.DB // read-only: queries that carry caller SQL (ListFilter.Where)
	readOnly bool    // opened by OpenReadOnly: db is ro

	wait LockWait // how writes wait for another connection's write lock

	mu  sync.Mutex
	run string // the run chosen by BeginRun, "" before
}

// rwParams are the connection settings of the read-write handle: WAL so
// readers never block the writer, NORMAL sync (a committed transaction
// survives a process crash; an OS crash may lose the last ones but never
// corrupts), foreign keys on, and IMMEDIATE transactions so two writers
// queue for the lock (SQLite's busy timeout is one slice of LockWait's
// wait) instead of failing on a lock upgrade.
var rwParams = fmt.Sprintf("_journal_mode=WAL&_synchronous=NORMAL&_foreign_keys=1&_busy_timeout=%d&_txlock=immediate", lockSlice.Milliseconds())

// Open opens the store at path as OpenWaiting does, its writes waiting
// silently for as long as another connection holds the write lock.
func Open(path string) (*Store, error) { return OpenWaiting(path, LockWait{}) }

// OpenWaiting opens the store at path, creating its directory and the
// database as needed, and migrates the schema to the current version.
// Opening a store written by a newer build is an error. Opening, and every
// write after, waits as wait says while another connection holds the
// database's write lock.
func OpenWaiting(path string, wait LockWait) (*Store, error) {
	if path == "" {
		return nil, errors.New("open store: empty path")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := refuseForeign(path); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db, err := sql.Open("sqlite3", uri(path)+"?"+rwParams)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// The first connection turns WAL on, and the migrations write: both
	// wait for another connection's write lock.
	if err := wait.retry("open the store", func() error { return walAndMigrate(db) }); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	ro, err := openReadOnly(path)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return &Store{path: path, db: db, ro: ro, wait: wait}, nil
}

// walAndMigrate checks that db is in WAL mode (its connections turn it on)
// and brings its schema to this build's.
func walAndMigrate(db *sql.DB) error {
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode is %q, want wal", mode)
	}
	return migrate(db, migrations)
}

// refuseForeign refuses an existing SQLite database that has tables but is
// not a store (a search index named by mistake), before anything switches
// its journal mode or adds tables to it. A missing or empty file is a new
// store.
func refuseForeign(path string) error {
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		return nil
	}
	db, err := openReadOnly(path)
	if err != nil {
		return err
	}
	defer db.Close()
	n, hasRuns, err := tables(db)
	if err != nil && !cantOpen(err) {
		return err
	}
	if n > 0 && !hasRuns {
		return ErrNotAStore
	}
	return nil
}

// Path returns the database file the store was opened on.
func (s *Store) Path() string { return s.path }

// Close closes the database. Writes already returned are durable. A
// read-write store leaves WAL mode on a clean close (after a checkpoint,
// when no other connection has it open): the file alone is then the whole
// database, and it can be read where the WAL's shared-memory file cannot be
// created (a read-only folder or medium). The next Open turns WAL on again.
func (s *Store) Close() error {
	errRO := s.ro.Close()
	if s.readOnly {
		if errRO != nil {
			return fmt.Errorf("close store %s: %w", s.path, errRO)
		}
		return nil
	}
	leaveWAL(s.db)
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.path, err)
	}
	if errRO != nil {
		return fmt.Errorf("close store %s: %w", s.path, errRO)
	}
	return nil
}

// leaveWAL checkpoints the WAL into the database and switches it to a
// rollback journal. It is best effort: while another connection (another
// process reading the store, say) has the database open SQLite keeps WAL
// mode, which is as correct, and the next close tries again.
func leaveWAL(db *sql.DB) {
	db.SetMaxIdleConns(1) // close the pool's other connections: the switch needs the only one
	c, err := db.Conn(context.Background())
	if err != nil {
		return
	}
	defer c.Close()
	c.ExecContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)")
	c.ExecContext(context.Background(), "PRAGMA journal_mode=DELETE")
}

// uri turns a file path into an SQLite URI filename, escaping the characters
// a URI gives a meaning to, so that any path opens the file it names.
func uri(path string) string {
	return "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
}
