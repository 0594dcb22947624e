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

// QueryLimit runs caller SQL on the read-only handle, as QueryReadOnly
// does, keeping at most limit rows (more reports truncated) and stopping
// when ctx ends. Statements that would write are refused with an error
// wrapping ErrReadOnly.
func (s *Store) QueryLimit(ctx context.Context, query string, limit int) (cols []string, rows [][]any, truncated bool, err error) {
	r, err := s.ro.QueryContext(ctx, query)
	if err != nil {
		return nil, nil, false, explainRefusal(err)
	}
	defer r.Close()
	if cols, err = r.Columns(); err != nil {
		return nil, nil, false, err
	}
	for r.Next() {
		if len(rows) == limit {
			truncated = true
			break
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := r.Scan(ptrs...); err != nil {
			return nil, nil, false, err
		}
		rows = append(rows, vals)
	}
	if err := r.Err(); err != nil {
		return nil, nil, false, explainRefusal(err)
	}
	return cols, rows, truncated, nil
}
