//go:build !sqlite_fts5

package search

import (
	"fmt"
	"os"
	"testing"
)

// missingFTS5 is what a test binary built without -tags sqlite_fts5 says.
const missingFTS5 = `agentrl: built without SQLite FTS5, which the search index needs.
Run the tests with
    make test
or
    go test -tags sqlite_fts5 ./...
(or export GOFLAGS=-tags=sqlite_fts5).`

// Without -tags sqlite_fts5 mattn/go-sqlite3 has no FTS5, and every index
// would fail deep inside a test with "no such module: fts5". A test binary
// of this package, or of any package importing it, says so once, at
// start, and exits 1. Programs are left alone: they report the missing
// module when they first open an index.
func init() {
	if testing.Testing() {
		fmt.Fprintln(os.Stderr, missingFTS5)
		os.Exit(1)
	}
}
