package search

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	_ "github.com/mattn/go-sqlite3" // SQLite driver; build with -tags sqlite_fts5
)

// schemaPrefix starts the schema mark of every search index, of any layout.
const schemaPrefix = "agentrl-search-"

// schemaVersion marks a file as a search index in this layout.
const schemaVersion = schemaPrefix + "1"

// buildBatch is how many passages are inserted between progress reports
// and context checks.
const buildBatch = 1000

// schema is the index layout: passages holds the text (title lookups go
// through the NOCASE title index), passages_fts is an external-content FTS5
// table over title and text (porter stemming, case and diacritics folded),
// and its rank is BM25 with the title weighted twice the text.
var schema = []string{
	`CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)`,
	`CREATE TABLE passages(id INTEGER PRIMARY KEY, title TEXT NOT NULL, text TEXT NOT NULL)`,
	`CREATE INDEX passages_title ON passages(title COLLATE NOCASE)`,
	`CREATE VIRTUAL TABLE passages_fts USING fts5(title, text, content='passages', content_rowid='id',
		tokenize='porter unicode61 remove_diacritics 2')`,
	`INSERT INTO passages_fts(passages_fts, rank) VALUES('rank', 'bm25(2.0, 1.0)')`,
}

// BuildIndex writes a search index of passages to out. It builds into a
// temporary file beside out in one transaction (no journal, no fsync until
// the end) and renames it over out only when complete, so out is either the
// old file or the whole new index. progress, when not nil, is called with
// the number of passages inserted so far and the total.
//
// An out that exists and is not a search index (a trajectory store, a
// corpus) is refused, and left as it is.
func BuildIndex(ctx context.Context, out string, passages []Passage, progress func(done, total int)) error {
	if err := CanReplace(out); err != nil {
		return fmt.Errorf("build index %s: %w", out, err)
	}
	if len(passages) == 0 {
		return fmt.Errorf("build index %s: no passages", out)
	}
	for i, p := range passages {
		if _, err := checked(p); err != nil {
			return fmt.Errorf("build index %s: passage %d: %w", out, i, err)
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return fmt.Errorf("build index %s: %w", out, err)
	}
	tmpPath := tmp.Name()
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("build index %s: %w", out, err)
	}
	if err := fill(ctx, tmpPath, passages, progress); err != nil {
		return errors.Join(fmt.Errorf("build index %s: %w", out, err), os.Remove(tmpPath))
	}
	if err := syncFile(tmpPath); err != nil {
		return errors.Join(fmt.Errorf("build index %s: %w", out, err), os.Remove(tmpPath))
	}
	if err := os.Rename(tmpPath, out); err != nil {
		return errors.Join(fmt.Errorf("build index %s: %w", out, err), os.Remove(tmpPath))
	}
	return nil
}

// CanReplace returns nil when a search index may be written to path:
// nothing is there, or a search index (of any layout) is. Anything else
// there is an error saying so. It only reads path.
func CanReplace(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	notIndex := fmt.Errorf("%s exists and is not a search index: it is not replaced (remove it, or write the index elsewhere)", path)
	if !fi.Mode().IsRegular() {
		return notIndex
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	// immutable: no lock, no journal or WAL file, nothing written beside it.
	db, err := sql.Open("sqlite3", "file:"+uriPath(abs)+"?mode=ro&immutable=1")
	if err != nil {
		return err
	}
	defer db.Close()
	var version string
	if err := db.QueryRow(`SELECT value FROM meta WHERE key = 'schema'`).Scan(&version); err != nil || !strings.HasPrefix(version, schemaPrefix) {
		return notIndex
	}
	return nil
}

// fill creates the schema in the empty database at path and inserts the
// passages.
func fill(ctx context.Context, path string, passages []Passage, progress func(done, total int)) (err error) {
	db, err := sql.Open("sqlite3", "file:"+uriPath(path))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, db.Close()) }()
	db.SetMaxOpenConns(1) // the pragmas below are per connection
	for _, p := range []string{"PRAGMA journal_mode=OFF", "PRAGMA synchronous=OFF"} {
		if _, err := db.ExecContext(ctx, p); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := populate(ctx, tx, passages, progress); err != nil {
		if rerr := tx.Rollback(); rerr != nil && !errors.Is(rerr, sql.ErrTxDone) {
			return errors.Join(err, rerr)
		}
		return err
	}
	return tx.Commit()
}

// populate creates the schema, inserts the passages, builds the full-text
// index and writes the meta rows.
func populate(ctx context.Context, tx *sql.Tx, passages []Passage, progress func(done, total int)) error {
	for _, s := range schema {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("create schema: %w", err)
		}
	}
	if err := insertPassages(ctx, tx, passages, progress); err != nil {
		return err
	}
	for _, s := range []string{
		`INSERT INTO passages_fts(passages_fts) VALUES('rebuild')`,
		`INSERT INTO passages_fts(passages_fts) VALUES('optimize')`,
	} {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("build full-text index: %w", err)
		}
	}
	meta := [][2]string{{"schema", schemaVersion}, {"passages", strconv.Itoa(len(passages))}}
	for _, kv := range meta {
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES(?, ?)`, kv[0], kv[1]); err != nil {
			return fmt.Errorf("write meta: %w", err)
		}
	}
	return nil
}

func insertPassages(ctx context.Context, tx *sql.Tx, passages []Passage, progress func(done, total int)) error {
	ins, err := tx.PrepareContext(ctx, `INSERT INTO passages(title, text) VALUES(?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	for i, p := range passages {
		p, _ = checked(p) // validated by BuildIndex; this trims
		if _, err := ins.ExecContext(ctx, p.Title, p.Text); err != nil {
			return fmt.Errorf("insert passage %d (%q): %w", i, p.Title, err)
		}
		if done := i + 1; done%buildBatch == 0 || done == len(passages) {
			if err := ctx.Err(); err != nil {
				return err
			}
			if progress != nil {
				progress(done, len(passages))
			}
		}
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}
