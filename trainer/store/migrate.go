package store

import (
	"database/sql"
	"fmt"
)

// migrations are the schema's forward steps: step i takes a database from
// version i (PRAGMA user_version) to version i+1. Steps are only ever
// appended; a released step is never edited.
var migrations = []string{schemaV1, schemaV2, schemaV3, schemaV4, schemaV5, schemaV6, schemaV7, schemaV8, schemaV9}

// migrate applies the steps a database has not seen yet, in order, each in
// its own transaction together with the version bump, so a crash leaves the
// database at a whole version. A database newer than steps is an error.
func migrate(db *sql.DB, steps []string) error {
	for {
		done, err := migrateOne(db, steps)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne applies the next pending step, reporting done when there is none.
func migrateOne(db *sql.DB, steps []string) (done bool, err error) {
	tx, err := db.Begin()
	if err != nil {
		return false, fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		return false, fmt.Errorf("migrate: read schema version: %w", err)
	}
	switch {
	case v > len(steps):
		return false, fmt.Errorf("schema version %d is newer than this build's %d: open it with a newer agentrl", v, len(steps))
	case v < 0:
		return false, fmt.Errorf("schema version %d is invalid", v)
	case v == len(steps):
		return true, nil
	}
	if _, err := tx.Exec(steps[v]); err != nil {
		return false, fmt.Errorf("migrate to version %d: %w", v+1, err)
	}
	if _, err := tx.Exec(fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
		return false, fmt.Errorf("migrate to version %d: set version: %w", v+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate to version %d: commit: %w", v+1, err)
	}
	return false, nil
}

// SchemaVersion is the schema version this build writes.
func SchemaVersion() int { return len(migrations) }
