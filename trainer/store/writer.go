package store

import (
	"errors"
	"fmt"
	"sync"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/agentrl/agentrl/trajectory"
)

// Writer stores iterations on a goroutine of its own, off the training
// loop's hot path. Batches are written in the order submitted. After a
// failed write, later batches are dropped (so the store never holds
// iteration n+1 without n) and every call reports the first error. A write
// that finds the database locked by another connection past the store's
// busy timeout is not a failure: it is retried until it succeeds.
type Writer struct {
	s     *Store
	queue chan writeJob
	done  chan struct{}
	wait  func(iter int, waited time.Duration)

	sendMu sync.RWMutex // held for reading while sending, for writing while closing
	closed bool

	errMu sync.Mutex
	err   error
}

// writeJob is one submitted iteration, or a flush marker when flushed is set.
type writeJob struct {
	iter    int
	metrics map[string]float64
	trajs   []*trajectory.Trajectory
	flushed chan struct{}
}

// errWriterClosed is returned when a Writer is used after Close.
var errWriterClosed = errors.New("store writer is closed")

// NewWriter starts a writer for s that queues up to depth batches (at least
// one) before Submit blocks. While another connection holds the database's
// write lock (a slow disk, another program's long write), a batch's write
// is retried, its transaction rolled back each time, so nothing is stored
// twice or lost; wait, when not nil, is told of each retry with how long
// that batch has waited. Close it to stop the goroutine.
func NewWriter(s *Store, depth int, wait func(iter int, waited time.Duration)) *Writer {
	if depth < 1 {
		depth = 1
	}
	w := &Writer{s: s, queue: make(chan writeJob, depth), done: make(chan struct{}), wait: wait}
	go w.loop()
	return w
}

// Submit queues an iteration for WriteIteration and returns at once unless
// depth batches are already waiting. The caller must not modify metrics or
// the trajectories afterwards. It returns the first write error so far.
func (w *Writer) Submit(iter int, metrics map[string]float64, trajs []*trajectory.Trajectory) error {
	if err := w.firstErr(); err != nil {
		return err
	}
	w.sendMu.RLock()
	defer w.sendMu.RUnlock()
	if w.closed {
		return fmt.Errorf("submit iteration %d: %w", iter, errWriterClosed)
	}
	w.queue <- writeJob{iter: iter, metrics: metrics, trajs: trajs}
	return nil
}

// Flush waits until every batch submitted before it is written and returns
// the first write error.
func (w *Writer) Flush() error {
	w.sendMu.RLock()
	if w.closed {
		w.sendMu.RUnlock()
		return w.firstErr()
	}
	done := make(chan struct{})
	w.queue <- writeJob{flushed: done}
	w.sendMu.RUnlock()
	<-done
	return w.firstErr()
}

// Close writes what is queued, stops the goroutine and returns the first
// write error. It does not close the Store.
func (w *Writer) Close() error {
	w.sendMu.Lock()
	if !w.closed {
		w.closed = true
		close(w.queue)
	}
	w.sendMu.Unlock()
	<-w.done
	return w.firstErr()
}

// loop writes queued batches until the queue is closed.
func (w *Writer) loop() {
	defer close(w.done)
	for j := range w.queue {
		if j.flushed != nil {
			close(j.flushed)
			continue
		}
		if w.firstErr() != nil {
			continue
		}
		if err := w.write(j); err != nil {
			w.errMu.Lock()
			w.err = err
			w.errMu.Unlock()
		}
	}
}

// busyPause is how long the writer waits before retrying a write that
// found the database locked, beyond the busy timeout it already waited.
const busyPause = 100 * time.Millisecond

// write writes one batch, retrying while the database is locked.
func (w *Writer) write(j writeJob) error {
	start := time.Now()
	for {
		err := w.s.WriteIteration(j.iter, j.metrics, j.trajs)
		if !locked(err) {
			return err
		}
		time.Sleep(busyPause)
		if w.wait != nil {
			w.wait(j.iter, time.Since(start))
		}
	}
}

// locked reports whether err is SQLite's: the database (or a table) is
// locked by another connection.
func locked(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// firstErr returns the first write error, nil when there was none.
func (w *Writer) firstErr() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}
