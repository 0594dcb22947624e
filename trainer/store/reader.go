package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agentrl/agentrl/trajectory"
)

// ReadOnlyDB returns the store's read-only handle, for viewers that build
// their own parameterised queries: its connections are opened mode=ro
// with query_only on and an authorizer that refuses ATTACH, so nothing
// run through it can change the store. The Store keeps ownership: Close
// closes it.
func (s *Store) ReadOnlyDB() *sql.DB { return s.ro }

// GetByKey returns one trajectory by its tid (the integer key the other
// tables refer to), whatever run it belongs to; a missing one is an error
// wrapping ErrNotFound.
func (s *Store) GetByKey(tid int64) (*trajectory.Trajectory, error) {
	ts, err := s.load("tid = ?", []any{tid})
	if err != nil {
		return nil, fmt.Errorf("get trajectory %d from %s: %w", tid, s.path, err)
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("get trajectory %d from %s: %w", tid, s.path, ErrNotFound)
	}
	return ts[0], nil
}

// QueryLimit runs caller SQL read-only, as QueryReadOnly does, on a
// connection of its own that is closed after it (so a BEGIN, SAVEPOINT or
// PRAGMA it runs leaves nothing behind), stopping when ctx ends. A string
// or blob over BoxMaxValue bytes is refused before SQLite makes it; rows
// are kept while there are at most maxRows and their values take at most
// maxBytes (more reports truncated). Statements that would write are
// refused with an error wrapping ErrReadOnly.
func (s *Store) QueryLimit(ctx context.Context, query string, maxRows, maxBytes int) (cols []string, rows [][]any, truncated bool, err error) {
	db, err := sql.Open(boxDriver, uri(s.path)+roParams)
	if err != nil {
		return nil, nil, false, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	r, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, nil, false, explainRefusal(err)
	}
	defer r.Close()
	if cols, err = r.Columns(); err != nil {
		return nil, nil, false, err
	}
	size := 0
	for r.Next() {
		if len(rows) == maxRows {
			truncated = true
			break
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := r.Scan(ptrs...); err != nil {
			return nil, nil, false, explainRefusal(err)
		}
		for _, v := range vals {
			size += valueSize(v)
		}
		if size > maxBytes {
			truncated = true
			break
		}
		rows = append(rows, vals)
	}
	if err := r.Err(); err != nil {
		return nil, nil, false, explainRefusal(err)
	}
	return cols, rows, truncated, nil
}

// valueSize is about the memory a scanned value takes.
func valueSize(v any) int {
	switch x := v.(type) {
	case string:
		return 16 + len(x)
	case []byte:
		return 24 + len(x)
	}
	return 16
}
