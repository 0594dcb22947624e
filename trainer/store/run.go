package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// timeLayout is how times are stored: UTC, millisecond precision, a form
// SQLite's date functions read.
const timeLayout = "2006-01-02T15:04:05.000Z"

// RunInfo describes a training run.
type RunInfo struct {
	Name       string    // the run's name, as in runs/<name>/
	ConfigJSON string    // the resolved configuration as JSON ("" stores "{}")
	GitRev     string    // the source revision that ran
	Start      time.Time // when the run (or this resume) started; zero means now
	Resume     bool      // a resume of the run (from a checkpoint), not a fresh start
}

// BeginRun makes info's run the one this store writes to. A new run gets a
// row. A resume (info.Resume) of a run that has one keeps its
// configuration, revision and start time, and records the resume time and
// count; a fresh start under a name the store already holds starts the row
// over, with no resume. While another connection holds the write lock it
// waits as the store's LockWait says.
func (s *Store) BeginRun(info RunInfo) error {
	if info.Name == "" {
		return fmt.Errorf("begin run in %s: empty run name", s.path)
	}
	cfg := info.ConfigJSON
	if strings.TrimSpace(cfg) == "" {
		cfg = "{}"
	}
	if !json.Valid([]byte(cfg)) {
		return fmt.Errorf("begin run %s in %s: config is not valid JSON", info.Name, s.path)
	}
	start := info.Start
	if start.IsZero() {
		start = time.Now()
	}
	at := start.UTC().Format(timeLayout)
	again := `config = excluded.config, git_rev = excluded.git_rev, started_at = excluded.started_at, resumed_at = NULL, resumes = 0`
	if info.Resume {
		again = `resumed_at = excluded.started_at, resumes = resumes + 1`
	}
	err := s.wait.retry("begin run "+info.Name, func() error {
		_, err := s.db.Exec(`INSERT INTO runs (name, config, git_rev, started_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET `+again, info.Name, cfg, info.GitRev, at)
		return err
	})
	if err != nil {
		return fmt.Errorf("begin run %s in %s: %w", info.Name, s.path, err)
	}
	s.mu.Lock()
	s.run = info.Name
	s.mu.Unlock()
	return nil
}

// scope returns the run that reads refer to: the one chosen by BeginRun,
// else the only run in the database. ok is false when the database holds no
// run yet; several runs without BeginRun is an error.
func (s *Store) scope() (run string, ok bool, err error) {
	s.mu.Lock()
	run = s.run
	s.mu.Unlock()
	if run != "" {
		return run, true, nil
	}
	rows, err := s.db.Query("SELECT name FROM runs ORDER BY name")
	if err != nil {
		return "", false, fmt.Errorf("list runs in %s: %w", s.path, err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return "", false, fmt.Errorf("list runs in %s: %w", s.path, err)
		}
		names = append(names, n)
	}
	if err := rows.Err(); err != nil {
		return "", false, fmt.Errorf("list runs in %s: %w", s.path, err)
	}
	switch len(names) {
	case 0:
		return "", false, nil
	case 1:
		return names[0], true, nil
	}
	return "", false, fmt.Errorf("%s holds %d runs (%s): call BeginRun to choose one", s.path, len(names), strings.Join(names, ", "))
}

// writeScope returns the run chosen by BeginRun, which writes require.
func (s *Store) writeScope() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.run == "" {
		return "", errors.New("no run begun: call BeginRun first")
	}
	return s.run, nil
}

// LastIteration returns the highest iteration stored for the run, and false
// when none is, so a resumed run continues the numbering at last+1.
func (s *Store) LastIteration() (int, bool, error) {
	run, ok, err := s.scope()
	if err != nil || !ok {
		return 0, false, err
	}
	var last sql.NullInt64
	if err := s.db.QueryRow("SELECT MAX(iteration) FROM iterations WHERE run = ?", run).Scan(&last); err != nil {
		return 0, false, fmt.Errorf("last iteration of run %s in %s: %w", run, s.path, err)
	}
	return int(last.Int64), last.Valid, nil
}
