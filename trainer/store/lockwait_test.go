package store

import (
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// prompt is how soon a stopped wait must end: well inside SQLite's old busy
// timeout (10 s), which was the least a locked write waited.
const prompt = 5 * time.Second

// A stop asked while the writer waits for another connection's write lock
// ends the wait at once: the flush returns an error that says so, naming
// the iteration, and nothing of the iteration is stored, before or after
// the lock is released.
func TestStoppedEndsTheWaitForTheWriteLock(t *testing.T) {
	var stop atomic.Bool
	s, lock := lockedStore(t, LockWait{Stopped: stop.Load})
	w := NewWriter(s, 1)
	if err := w.Submit(0, map[string]float64{"it": 0}, synthBatch(0, 2, 150, 1)); err != nil {
		t.Fatal(err)
	}
	flushed := make(chan error, 1)
	go func() { flushed <- w.Flush() }()
	select {
	case err := <-flushed:
		t.Fatalf("the flush ended (%v) with the lock held and no stop asked", err)
	case <-time.After(500 * time.Millisecond):
	}
	stop.Store(true)
	select {
	case err := <-flushed:
		if !errors.Is(err, ErrLockWaitStopped) || !strings.Contains(err.Error(), "write iteration 0") {
			t.Errorf("the stopped flush returned %v, want ErrLockWaitStopped naming iteration 0", err)
		}
	case <-time.After(prompt):
		t.Fatalf("the write still waits for the lock %v after the stop", prompt)
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); !errors.Is(err, ErrLockWaitStopped) {
		t.Errorf("Close: %v, want the stopped write's error", err)
	}
	if last, ok, err := s.LastIteration(); err != nil || ok {
		t.Errorf("after the stopped write the store holds iteration %d (%v, %v), want none", last, ok, err)
	}
	var n int
	if err := s.db.QueryRow("SELECT COUNT(*) FROM trajectories").Scan(&n); err != nil || n != 0 {
		t.Errorf("the store holds %d trajectories (%v), want none", n, err)
	}
}

// Opening a store while another connection holds its write lock (a store
// closed cleanly, in its rollback-journal mode, as the sqlite3 shell finds
// it, where SQLite refuses the switch to WAL at once) waits for the lock:
// a stop ends that wait at once with ErrLockWaitStopped, and without a stop
// the open succeeds once the lock is released, and the store is written.
func TestOpenWaitsForTheWriteLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs", "test", "store.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.BeginRun(RunInfo{Name: "w"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	lock := lockDatabase(t, path)

	var stop atomic.Bool
	stopped := make(chan error, 1)
	go func() {
		s, err := OpenWaiting(path, LockWait{Stopped: stop.Load})
		if err == nil {
			s.Close()
		}
		stopped <- err
	}()
	waiting := make(chan *Store, 1)
	go func() {
		s, err := Open(path)
		if err != nil {
			t.Errorf("open once the lock is released: %v", err)
		}
		waiting <- s
	}()
	select {
	case err := <-stopped:
		t.Fatalf("the open ended (%v) with the lock held and no stop asked", err)
	case s := <-waiting:
		s.Close()
		t.Fatal("the open ended with the lock held")
	case <-time.After(time.Second):
	}
	stop.Store(true)
	select {
	case err := <-stopped:
		if !errors.Is(err, ErrLockWaitStopped) {
			t.Errorf("the stopped open returned %v, want ErrLockWaitStopped", err)
		}
	case <-time.After(prompt):
		t.Fatalf("the open still waits for the lock %v after the stop", prompt)
	}
	if err := lock.Rollback(); err != nil {
		t.Fatal(err)
	}
	s = <-waiting
	if s == nil {
		return
	}
	defer s.Close()
	if err := s.BeginRun(RunInfo{Name: "w", Resume: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteIteration(0, nil, synthBatch(0, 1, 120, 1)); err != nil {
		t.Fatal(err)
	}
}
