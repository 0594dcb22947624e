// Package search is BM25 retrieval over a passage corpus stored in SQLite
// with FTS5, and the "search" and "lookup" tools an agent calls. Build an
// index once with BuildIndex (from LoadCorpus), Open it read-only, and
// share the *Index between any number of goroutines.
//
// Anything importing this package must be built with -tags sqlite_fts5.
package search

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// ErrNoTerms is returned by Search when the query has no word to look for
// (empty, or only punctuation and operators).
var ErrNoTerms = errors.New("query has no words to search for")

// Hit is one search result: a passage and its BM25 score (higher is better).
type Hit struct {
	Title string
	Text  string
	Score float64
}

// Index is an open, read-only search index. It is safe for concurrent use.
type Index struct {
	path   string
	db     *sql.DB
	n      int
	search *sql.Stmt
	lookup *sql.Stmt
}

// Open opens the index at path read-only, with a pool of connections so
// that concurrent queries run in parallel. A missing file, a file that is
// not SQLite, or a database that is not a search index is an error naming
// path.
func Open(path string) (*Index, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("open search index %s: %w", path, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open search index %s: %w", path, err)
	}
	db, err := sql.Open("sqlite3", "file:"+uriPath(abs)+"?mode=ro&_query_only=true")
	if err != nil {
		return nil, fmt.Errorf("open search index %s: %w", path, err)
	}
	conns := 2 * runtime.GOMAXPROCS(0)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	idx := &Index{path: path, db: db}
	if err := idx.init(); err != nil {
		return nil, errors.Join(fmt.Errorf("open search index %s: %w", path, err), db.Close())
	}
	return idx, nil
}

func (x *Index) init() error {
	var version, count string
	row := x.db.QueryRow(`SELECT (SELECT value FROM meta WHERE key = 'schema'), (SELECT value FROM meta WHERE key = 'passages')`)
	if err := row.Scan(&version, &count); err != nil {
		return fmt.Errorf("not a search index: %w", err)
	}
	if version != schemaVersion {
		return fmt.Errorf("schema %q, want %q", version, schemaVersion)
	}
	n, err := strconv.Atoi(count)
	if err != nil {
		return fmt.Errorf("passage count %q: %w", count, err)
	}
	x.n = n
	if x.search, err = x.db.Prepare(`SELECT title, text, -rank FROM passages_fts WHERE passages_fts MATCH ? ORDER BY rank LIMIT ?`); err != nil {
		return err
	}
	// Exact title first, then a case-insensitive match; the first stored on ties.
	if x.lookup, err = x.db.Prepare(`SELECT title, text FROM passages WHERE title = ?1 COLLATE NOCASE ORDER BY title = ?1 DESC, id LIMIT 1`); err != nil {
		return err
	}
	return nil
}

// Len returns the number of passages in the index.
func (x *Index) Len() int { return x.n }

// Path returns the file the index was opened from.
func (x *Index) Path() string { return x.path }

// Close releases the index's connections.
func (x *Index) Close() error {
	return errors.Join(x.search.Close(), x.lookup.Close(), x.db.Close())
}

// Search returns the k passages that best match query by BM25 (title
// weighted 2, text 1), best first. The query is free text: it is split into
// words (see Terms), English stopwords are dropped unless nothing else is
// left, and any passage containing any remaining word is a candidate, so
// FTS5 operators, quotes or column names in it are just words. A query
// without words returns ErrNoTerms.
func (x *Index) Search(ctx context.Context, query string, k int) ([]Hit, error) {
	if k < 1 {
		return nil, fmt.Errorf("search %s: k = %d, want >= 1", x.path, k)
	}
	terms := Terms(query)
	if len(terms) == 0 {
		return nil, ErrNoTerms
	}
	rows, err := x.search.QueryContext(ctx, matchExpr(content(terms)), k)
	if err != nil {
		return nil, fmt.Errorf("search %s for %q: %w", x.path, query, err)
	}
	defer rows.Close()
	var hits []Hit
	for rows.Next() {
		var h Hit
		if err := rows.Scan(&h.Title, &h.Text, &h.Score); err != nil {
			return nil, fmt.Errorf("search %s for %q: %w", x.path, query, err)
		}
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search %s for %q: %w", x.path, query, err)
	}
	return hits, nil
}

// Lookup returns the passage titled title (surrounding spaces ignored):
// the exact title if there is one, else a case-insensitive match. The bool
// is false when no passage has that title. Case folding is ASCII only
// (SQLite NOCASE).
func (x *Index) Lookup(ctx context.Context, title string) (Passage, bool, error) {
	var p Passage
	err := x.lookup.QueryRowContext(ctx, strings.TrimSpace(title)).Scan(&p.Title, &p.Text)
	if errors.Is(err, sql.ErrNoRows) {
		return Passage{}, false, nil
	}
	if err != nil {
		return Passage{}, false, fmt.Errorf("lookup %q in %s: %w", title, x.path, err)
	}
	return p, true, nil
}

// uriPath escapes the characters that would end the path part of an SQLite
// URI filename.
func uriPath(p string) string {
	return strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(filepath.ToSlash(p))
}
