package store

import (
	"errors"
	"fmt"
	"sync"

	"github.com/agentrl/agentrl/trajectory"
)

// Writer stores iterations on a goroutine of its own, off the training
// loop's hot path. Batches are written in the order submitted. After a
// failed write, later batches are dropped (so the store never holds
// iteration n+1 without n) and every call reports the first error. A write
// that finds the database locked by another connection waits as the
// store's LockWait says: until the lock is released, or, when its Stopped
// ends the wait, as a failed write.
type Writer struct {
	s     *Store
	queue chan writeJob
	done  chan struct{}

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
// one) before Submit blocks. Close it to stop the goroutine.
func NewWriter(s *Store, depth int) *Writer {
	if depth < 1 {
		depth = 1
	}
	w := &Writer{s: s, queue: make(chan writeJob, depth), done: make(chan struct{})}
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
		if err := w.s.WriteIteration(j.iter, j.metrics, j.trajs); err != nil {
			w.errMu.Lock()
			w.err = err
			w.errMu.Unlock()
		}
	}
}

// firstErr returns the first write error, nil when there was none.
func (w *Writer) firstErr() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}
