package store

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWriterWritesInOrderAndFlushes(t *testing.T) {
	s := openTemp(t)
	if err := s.BeginRun(RunInfo{Name: "w"}); err != nil {
		t.Fatal(err)
	}
	w := NewWriter(s, 2)
	for it := range 5 {
		if err := w.Submit(it, map[string]float64{"it": float64(it)}, synthBatch(it, 4, 200, 2)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	// After Flush all five are readable.
	last, ok, err := s.LastIteration()
	if err != nil || !ok || last != 4 {
		t.Fatalf("after Flush LastIteration = %d, %v, %v; want 4", last, ok, err)
	}
	if err := w.Submit(5, nil, synthBatch(5, 4, 200, 2)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if last, _, _ := s.LastIteration(); last != 5 {
		t.Errorf("Close did not write the queued batch: last iteration %d, want 5", last)
	}
	if err := w.Submit(6, nil, nil); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Submit after Close: %v; want a closed error", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestWriterSurfacesFirstErrorAndStops(t *testing.T) {
	s := openTemp(t)
	if err := s.BeginRun(RunInfo{Name: "w"}); err != nil {
		t.Fatal(err)
	}
	w := NewWriter(s, 4)
	bad := synthBatch(1, 2, 150, 1)
	bad[1].Mask = nil // length mismatch: iteration 1 fails
	if err := w.Submit(0, nil, synthBatch(0, 2, 150, 1)); err != nil {
		t.Fatal(err)
	}
	if err := w.Submit(1, nil, bad); err != nil {
		t.Fatal(err) // queued; the failure shows later
	}
	if err := w.Submit(2, nil, synthBatch(2, 2, 150, 1)); err != nil && !strings.Contains(err.Error(), "iteration 1") {
		t.Fatal(err)
	}
	err := w.Close()
	if err == nil || !strings.Contains(err.Error(), "write iteration 1") || !strings.Contains(err.Error(), "Mask") {
		t.Fatalf("Close: %v; want the iteration-1 error", err)
	}
	// Iteration 2 was dropped so the store holds no gap: only iteration 0.
	last, ok, _ := s.LastIteration()
	if !ok || last != 0 {
		t.Errorf("last stored iteration %d (ok %v), want 0", last, ok)
	}
	if err := w.Submit(3, nil, nil); err == nil {
		t.Error("Submit after a failure must report it")
	}
}

func TestWriterSubmitBlocksOnlyWhenQueueIsFull(t *testing.T) {
	// Another connection holds the write lock, so the writer goroutine
	// stalls in its first transaction (it waits on the busy timeout).
	s, lock := lockedStore(t, LockWait{})
	const depth = 3
	w := NewWriter(s, depth)
	// The goroutine takes batch 0 and stalls; batches 1..depth fill the queue.
	// None of these depth+1 submits may wait for the database.
	for it := range depth + 1 {
		done := make(chan error, 1)
		go func() { done <- w.Submit(it, nil, synthBatch(it, 1, 120, 1)) }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Submit of batch %d blocked with %d batches queued (depth %d)", it, it, depth)
		}
		if it == 0 {
			time.Sleep(50 * time.Millisecond) // let the goroutine take batch 0
		}
	}
	// The queue is full: the next Submit waits until the lock is released.
	blocked := make(chan error, 1)
	go func() { blocked <- w.Submit(depth+1, nil, synthBatch(depth+1, 1, 120, 1)) }()
	select {
	case err := <-blocked:
		t.Fatalf("Submit returned (%v) with a full queue and a stalled writer", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if last, _, _ := s.LastIteration(); last != depth+1 {
		t.Errorf("last iteration %d, want %d", last, depth+1)
	}
}

// A write that finds the database locked past SQLite's old busy timeout
// of 10 s (another connection holds the write lock for longer, as a kill
// test under load or another program's long write does) waits, the wait
// reported after 10 s, and is stored once the lock is released, not
// failed.
func TestWriterWaitsOutALockPastTheBusyTimeout(t *testing.T) {
	warned := make(chan time.Duration, 16)
	s, lock := lockedStore(t, LockWait{Warn: func(what string, waited time.Duration) {
		if what != "write iteration 0" {
			t.Errorf("wait reported for %q, want write iteration 0", what)
		}
		select {
		case warned <- waited:
		default:
		}
	}})
	w := NewWriter(s, 1)
	if err := w.Submit(0, map[string]float64{"it": 0}, synthBatch(0, 2, 150, 1)); err != nil {
		t.Fatal(err)
	}
	// A writer that gives up instead ends the flush with the error.
	flushed := make(chan error, 1)
	go func() { flushed <- w.Flush() }()
	select {
	case waited := <-warned:
		if waited < 10*time.Second {
			t.Errorf("first report after %v, want one after 10 s", waited)
		}
	case err := <-flushed:
		t.Fatalf("the write ended with the database locked instead of waiting: %v", err)
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("the write failed instead of waiting for the lock: %v", err)
	}
	last, ok, err := s.LastIteration()
	if err != nil || !ok || last != 0 {
		t.Fatalf("after the lock: last iteration %d (stored %v, %v), want 0", last, ok, err)
	}
	var n int
	if err := s.db.QueryRow("SELECT COUNT(*) FROM trajectories").Scan(&n); err != nil || n != 2 {
		t.Errorf("stored %d trajectories (%v), want the batch's 2 once", n, err)
	}
}

// lockedStore is a store opened with wait, with a run begun, whose write
// lock another connection holds (BEGIN IMMEDIATE) until the test rolls
// lock back.
func lockedStore(t *testing.T, wait LockWait) (*Store, *sql.Tx) {
	t.Helper()
	s, err := OpenWaiting(filepath.Join(t.TempDir(), "runs", "test", "store.db"), wait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.BeginRun(RunInfo{Name: "w"}); err != nil {
		t.Fatal(err)
	}
	return s, lockDatabase(t, s.Path())
}

// lockDatabase takes the write lock of the database at path on a
// connection of its own (BEGIN IMMEDIATE), as another program writing to
// it holds it, until the test rolls it back (or ends).
func lockDatabase(t *testing.T, path string) *sql.Tx {
	t.Helper()
	other, err := sql.Open("sqlite3", uri(path)+"?_busy_timeout=10000&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	lock, err := other.Begin()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Rollback() })
	return lock
}
