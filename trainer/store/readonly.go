package store

import (
	"database/sql"
	"errors"
	"fmt"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// readOnlyDriver is the sqlite3 driver with an authorizer that refuses what
// mode=ro and query_only let through: ATTACH (it creates files and gives a
// writable schema), DETACH, VACUUM INTO (which attaches internally) and
// turning query_only off.
const readOnlyDriver = "sqlite3_agentrl_readonly"

// boxDriver is readOnlyDriver for one caller query on a connection of its
// own (QueryLimit): it also caps a string or blob at BoxMaxValue bytes
// (SQLITE_LIMIT_LENGTH) and a result at boxMaxColumns columns, so no
// value or row that SQLite makes can take more memory than that.
const boxDriver = "sqlite3_agentrl_box"

// Limits of a query run by QueryLimit.
const (
	BoxMaxValue   = 1 << 20 // bytes of one string or blob (SQLITE_LIMIT_LENGTH)
	boxMaxColumns = 128     // columns of a result or table (SQLITE_LIMIT_COLUMN)
)

func init() {
	sql.Register(readOnlyDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		c.RegisterAuthorizer(readOnlyAuthorizer)
		return nil
	}})
	sql.Register(boxDriver, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		c.RegisterAuthorizer(readOnlyAuthorizer)
		c.SetLimit(sqlite3.SQLITE_LIMIT_LENGTH, BoxMaxValue)
		c.SetLimit(sqlite3.SQLITE_LIMIT_COLUMN, boxMaxColumns)
		return nil
	}})
}

// readOnlyAuthorizer refuses ATTACH, DETACH and PRAGMA query_only.
func readOnlyAuthorizer(op int, arg1, _, _ string) int {
	switch {
	case op == sqlite3.SQLITE_ATTACH, op == sqlite3.SQLITE_DETACH:
		return sqlite3.SQLITE_DENY
	case op == sqlite3.SQLITE_PRAGMA && arg1 == "query_only":
		return sqlite3.SQLITE_DENY
	}
	return sqlite3.SQLITE_OK
}

// openReadOnly opens path read-only: the file is opened with mode=ro,
// every connection runs PRAGMA query_only=1, and the authorizer above
// holds. It does not create the file.
func openReadOnly(path string) (*sql.DB, error) {
	return sql.Open(readOnlyDriver, uri(path)+roParams)
}

// roParams are the read-only connections' settings.
const roParams = "?mode=ro&_query_only=1&_busy_timeout=10000"

// QueryReadOnly runs one query against the store at path, opened read-only
// so that the query cannot change anything: INSERT, UPDATE, DELETE, DROP,
// ATTACH and the like are refused with an error that says so. It returns
// the column names and every row; values are int64, float64, string,
// []byte or nil.
func QueryReadOnly(path, query string, args ...any) (cols []string, rows [][]any, err error) {
	s, err := OpenReadOnly(path)
	if err != nil {
		return nil, nil, fmt.Errorf("query: %w", err)
	}
	defer s.Close()
	cols, rows, err = queryAll(s.ro, query, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("query %s: %w", path, explainRefusal(err))
	}
	return cols, rows, nil
}

// queryAll runs a query and collects every row as Go values.
func queryAll(db *sql.DB, query string, args ...any) ([]string, [][]any, error) {
	r, err := db.Query(query, args...)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	cols, err := r.Columns()
	if err != nil {
		return nil, nil, err
	}
	var rows [][]any
	for r.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := r.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		rows = append(rows, vals)
	}
	return cols, rows, r.Err()
}

// ErrReadOnly is wrapped by the errors of queries that tried to write to a
// store opened read-only.
var ErrReadOnly = errors.New("refused: the store is opened read-only and this statement would write")

// explainRefusal turns SQLite's read-only and authorization errors into one
// that says why, keeping SQLite's message.
func explainRefusal(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrReadonly || se.Code == sqlite3.ErrAuth) {
		return fmt.Errorf("%w (sqlite: %v)", ErrReadOnly, err)
	}
	if errors.As(err, &se) && se.Code == sqlite3.ErrTooBig {
		return fmt.Errorf("refused: a value over the %d bytes a query may make (SQLITE_LIMIT_LENGTH) (sqlite: %v)", BoxMaxValue, err)
	}
	return err
}
