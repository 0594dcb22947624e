package trainer

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/store"
)

// storeLock is the write lock of a run's store, held on a connection of
// its own (BEGIN IMMEDIATE) as another program writing to the store (the
// sqlite3 shell, a second trainer) holds it.
type storeLock struct {
	db *sql.DB
	tx *sql.Tx
}

// lockStore takes the write lock of the store at path.
func lockStore(path string) (*storeLock, error) {
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	tx, err := db.Begin()
	if err != nil {
		db.Close()
		return nil, err
	}
	return &storeLock{db: db, tx: tx}, nil
}

// release gives the lock back and closes its connection.
func (l *storeLock) release() {
	l.tx.Rollback()
	l.db.Close()
}

// lockAndStopBar, at the first step of its bar, takes the store's write
// lock and then asks the run to stop, as a user presses Ctrl-C while
// another program writes to the store.
type lockAndStopBar struct {
	path  string
	stop  chan struct{}
	taken chan *storeLock
}

func (b lockAndStopBar) Add(int) {
	select {
	case <-b.stop:
		return
	default:
	}
	l, err := lockStore(b.path)
	if err != nil {
		panic(err)
	}
	b.taken <- l
	close(b.stop)
}

func (lockAndStopBar) Done() {}

// Ctrl-C while another connection holds the store's write lock (taken in
// the rollout of iteration 1, after the checkpoint of iteration 0): the
// run, which cannot store iteration 1, ends within seconds instead of
// waiting for the lock, with an error that says so, and without a
// checkpoint the store does not cover. Once the lock is released the run
// resumes from iteration 0 and ends with every iteration stored once.
func TestStopWhileTheStoreIsLocked(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	cfg := smallConfig(t.TempDir())
	run := RunDir(cfg)
	path := filepath.Join(run, "store.db")
	stop := make(chan struct{})
	taken := make(chan *storeLock, 1)
	progress := func(label string, total int) Bar {
		if label == "iter 1 rollout" {
			return lockAndStopBar{path: path, stop: stop, taken: taken}
		}
		return noBar{}
	}
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop(), Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := tr.Run(context.Background(), stop)
		done <- err
	}()
	var lock *storeLock
	select {
	case lock = <-taken:
	case err := <-done:
		t.Fatalf("the run ended (%v) before the rollout of iteration 1", err)
	}
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Cleanup(lock.release) // let the run end
		t.Fatal("asked to stop while another connection held the store's write lock, the run still runs a minute later")
	}
	if err == nil || !strings.Contains(err.Error(), "stopped while waiting for another connection's write lock") {
		t.Errorf("the stopped run returned %v, want an error saying it stopped waiting for the store's write lock", err)
	}
	tr.Close()
	lock.release()
	if !latestIs(run, 0) {
		t.Fatal("after the stop the latest checkpoint is not iteration 0's")
	}
	checkStoreCovers(t, run)
	cfg.Run.Resume = true
	tr, err = New(context.Background(), cfg, Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got := storedIterations(storedMetrics(t, path)); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("the resumed run's store holds iterations %v, want [0 1 2]", got)
	}
}

// --resume while another connection holds the store's write lock (the
// store closed cleanly, so in its rollback-journal mode, as the sqlite3
// shell finds it) waits for the lock as the store's writer does, past
// SQLite's busy timeout of 10 s, instead of failing: a stop (Ctrl-C) ends
// the wait at once, and without one the resumed run starts once the lock
// is released and ends with every iteration stored.
func TestResumeWaitsForTheStoreLock(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	cfg := smallConfig(t.TempDir())
	cfg.Run.Iterations = 1
	run := RunDir(cfg)
	path := filepath.Join(run, "store.db")
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.Run(context.Background(), nil)
	tr.Close()
	if err != nil {
		t.Fatal(err)
	}
	lock, err := lockStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.release()
	cfg.Run.Resume, cfg.Run.Iterations = true, 2
	// Ctrl-C while it waits ends the wait at once, with nothing written.
	stop := make(chan struct{})
	stopped := make(chan error, 1)
	go func() {
		tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop(), Stop: stop})
		if err == nil {
			tr.Close()
		}
		stopped <- err
	}()
	select {
	case err := <-stopped:
		t.Fatalf("--resume with the store's write lock held ended (%v) instead of waiting for it", err)
	case <-time.After(2 * time.Second):
	}
	close(stop)
	select {
	case err := <-stopped:
		if !errors.Is(err, store.ErrLockWaitStopped) {
			t.Errorf("--resume stopped while waiting for the lock returned %v, want store.ErrLockWaitStopped", err)
		}
	case <-time.After(5 * time.Second): // well inside SQLite's busy timeout, 10 s
		t.Fatal("--resume still waits for the lock 5 s after the stop")
	}
	// Without a stop it waits past SQLite's busy timeout, then resumes.
	type built struct {
		tr  *Trainer
		err error
	}
	started := make(chan built, 1)
	go func() {
		tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop()})
		started <- built{tr, err}
	}()
	const held = 12 * time.Second // past SQLite's busy timeout
	select {
	case b := <-started:
		if b.err == nil {
			b.tr.Close()
		}
		t.Fatalf("--resume with the store's write lock held ended (%v) instead of waiting for it", b.err)
	case <-time.After(held):
	}
	lock.release()
	b := <-started
	if b.err != nil {
		t.Fatal(b.err)
	}
	defer b.tr.Close()
	if _, err := b.tr.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if got := storedIterations(storedMetrics(t, path)); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("the resumed run's store holds iterations %v, want [0 1 2]", got)
	}
}
