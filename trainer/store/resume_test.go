package store

import (
	"bytes"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

func TestResumedRunContinuesNumbering(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs", "r", "store.db")
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.LastIteration(); ok || err != nil {
		t.Fatalf("LastIteration of an empty store: ok %v, %v", ok, err)
	}
	if err := s.BeginRun(RunInfo{Name: "r", ConfigJSON: `{"seed":1}`, GitRev: "aaa", Start: start}); err != nil {
		t.Fatal(err)
	}
	for it := range 3 {
		if err := s.WriteIteration(it, map[string]float64{"step": float64(it)}, synthBatch(it, 2, 150, 1)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	// The trainer restarts: same run name, new revision and config.
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resume := start.Add(90 * time.Minute)
	if err := s.BeginRun(RunInfo{Name: "r", ConfigJSON: `{"seed":2}`, GitRev: "bbb", Start: resume, Resume: true}); err != nil {
		t.Fatal(err)
	}
	last, ok, err := s.LastIteration()
	if err != nil || !ok || last != 2 {
		t.Fatalf("LastIteration after resume = %d, %v, %v; want 2, true", last, ok, err)
	}
	if err := s.WriteIteration(last+1, nil, synthBatch(last+1, 2, 150, 1)); err != nil {
		t.Fatal(err)
	}
	if last, _, _ = s.LastIteration(); last != 3 {
		t.Errorf("LastIteration after writing the next one = %d, want 3", last)
	}
	// The run keeps its first row and records one resume at the resume time.
	var n, resumes int
	var cfg, rev, started, resumed string
	if err := s.db.QueryRow("SELECT COUNT(*) FROM runs").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRow("SELECT config, git_rev, started_at, resumed_at, resumes FROM runs WHERE name = 'r'").
		Scan(&cfg, &rev, &started, &resumed, &resumes); err != nil {
		t.Fatal(err)
	}
	if n != 1 || cfg != `{"seed":1}` || rev != "aaa" || started != "2025-03-01T12:00:00.000Z" ||
		resumed != "2025-03-01T13:30:00.000Z" || resumes != 1 {
		t.Errorf("runs: %d rows, config %s, rev %s, started %s, resumed %s, resumes %d", n, cfg, rev, started, resumed, resumes)
	}
	ms, err := s.Metrics()
	if err != nil || len(ms) != 4 {
		t.Fatalf("Metrics: %d iterations, %v; want 4", len(ms), err)
	}
	for i, m := range ms {
		if m.Iteration != i {
			t.Errorf("Metrics()[%d].Iteration = %d", i, m.Iteration)
		}
	}
}

// A fresh start under a name the store already holds (a run stopped
// before its first checkpoint, started again) is no resume: the row takes
// the new configuration, revision and start time, and counts no resume.
func TestFreshStartIsNoResume(t *testing.T) {
	s := openTemp(t)
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	if err := s.BeginRun(RunInfo{Name: "r", ConfigJSON: `{"seed":1}`, GitRev: "aaa", Start: start}); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRun(RunInfo{Name: "r", ConfigJSON: `{"seed":2}`, GitRev: "bbb", Start: start.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	var n, resumes int
	var cfg, rev, started string
	var resumed sql.NullString
	if err := s.db.QueryRow("SELECT COUNT(*) FROM runs").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRow("SELECT config, git_rev, started_at, resumed_at, resumes FROM runs WHERE name = 'r'").
		Scan(&cfg, &rev, &started, &resumed, &resumes); err != nil {
		t.Fatal(err)
	}
	if n != 1 || cfg != `{"seed":2}` || rev != "bbb" || started != "2025-03-01T13:00:00.000Z" || resumed.Valid || resumes != 0 {
		t.Errorf("runs: %d rows, config %s, rev %s, started %s, resumed %v, resumes %d; want the fresh start's row, no resume",
			n, cfg, rev, started, resumed, resumes)
	}
}

func TestReadsWithoutBeginRun(t *testing.T) {
	s := openTemp(t)
	for _, name := range []string{"a", "b"} {
		if err := s.BeginRun(RunInfo{Name: name}); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteIteration(0, nil, synthBatch(0, 1, 120, 1)); err != nil {
			t.Fatal(err)
		}
	}
	// A second handle on the same file has not begun a run: two runs are
	// ambiguous, and the error says how to resolve it.
	s2, err := Open(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, _, err := s2.LastIteration(); err == nil {
		t.Error("LastIteration over two runs without BeginRun must be an error")
	}
	if err := s2.BeginRun(RunInfo{Name: "b"}); err != nil {
		t.Fatal(err)
	}
	if ts, err := s2.LoadIteration(0, ""); err != nil || len(ts) != 1 {
		t.Errorf("LoadIteration in run b: %d, %v; want 1", len(ts), err)
	}
}

// The experts a rollout recorded for each token (routing replay) survive a
// resume: written, the store closed, reopened and resumed, the
// trajectories read back with the same bytes; a trajectory without a
// record reads back without one.
func TestRoutingSurvivesResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs", "r", "store.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRun(RunInfo{Name: "r", ConfigJSON: `{}`, GitRev: "aaa", Start: time.Unix(1700000000, 0)}); err != nil {
		t.Fatal(err)
	}
	batch := synthBatch(0, 2, 150, 1)
	batch[0].Routing = make([]byte, 150*2*2) // 150 tokens, 2 sparse layers, top-2
	for i := range batch[0].Routing {
		batch[0].Routing[i] = byte(i*7%64 + i%2)
	}
	if err := s.WriteIteration(0, nil, batch); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.BeginRun(RunInfo{Name: "r", ConfigJSON: `{}`, GitRev: "bbb", Start: time.Unix(1700005400, 0), Resume: true}); err != nil {
		t.Fatal(err)
	}
	got, err := s.LoadIteration(0, "")
	if err != nil || len(got) != 2 {
		t.Fatalf("LoadIteration after resume: %d trajectories, %v", len(got), err)
	}
	if !bytes.Equal(got[0].Routing, batch[0].Routing) || got[1].Routing != nil {
		t.Errorf("routing after resume: %d bytes (equal %v) and %d bytes; want the %d written and none",
			len(got[0].Routing), bytes.Equal(got[0].Routing, batch[0].Routing), len(got[1].Routing), len(batch[0].Routing))
	}
}
