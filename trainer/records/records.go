// Package records keeps what a run did, on rank 0: the trajectory store
// (store.path, or <run>/store.db) with its background writer, and <run>/tb,
// the metrics for TensorBoard.
package records

import (
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/tensorboard"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/results"
	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
)

// Records are a run's store, its writer and its TensorBoard file.
type Records struct {
	store  *store.Store
	writer *store.Writer
	tb     *tensorboard.Writer
}

// Open opens the records of the run in folder dir and begins the run in
// the store; resumed, the iterations after the checkpoint's, after, are
// dropped (a fresh start drops all). While another connection holds the
// store's write lock, opening it and every write after wait, warned
// about, until stopped says a stop was asked. What it opened before an
// error is closed.
func Open(cfg config.Config, dir, gitRev string, resumed bool, after int, stopped func() bool, log zerolog.Logger) (*Records, error) {
	r := &Records{}
	if err := r.open(cfg, dir, gitRev, resumed, after, stopped, log); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Records) open(cfg config.Config, dir, gitRev string, resumed bool, after int, stopped func() bool, log zerolog.Logger) error {
	path := cfg.Store.Path
	if path == "" {
		path = filepath.Join(dir, "store.db")
	}
	s, err := store.OpenWaiting(path, store.LockWait{
		Stopped: stopped,
		Warn: func(what string, waited time.Duration) {
			log.Warn().Str("waiting_to", what).Dur("waited", waited).Str("store", path).
				Msg("the store is locked by another connection: waiting for its write lock (Ctrl-C stops the wait; nothing is lost)")
		},
	})
	if err != nil {
		return err
	}
	r.store = s
	cj, err := json.Marshal(cfg)
	if err != nil {
		return err
	}
	if err := s.BeginRun(store.RunInfo{Name: cfg.Run.Name, ConfigJSON: string(cj), GitRev: gitRev, Start: time.Now(), Resume: resumed}); err != nil {
		return err
	}
	// Iterations after the checkpoint (or all, for a fresh start) are redone.
	if !resumed {
		after = -1
	}
	n, err := s.DropAfter(after)
	if err != nil {
		return err
	}
	if n > 0 {
		log.Warn().Int("iterations", n).Int("after", after).Msg("dropped stored iterations that the checkpoint does not cover; they are redone")
	}
	r.writer = store.NewWriter(s, max(1, cfg.Store.WriterDepth))
	if r.tb, err = tensorboard.Create(filepath.Join(dir, "tb")); err != nil {
		return err
	}
	return nil
}

// Submit hands an iteration's metrics and trajectories to the store
// writer, and the metrics to TensorBoard (one scalar per metric, at the
// iteration as step). Nil records (the ranks other than 0, which hold
// every rank's trajectories too) keep nothing.
func (r *Records) Submit(iter int, m map[string]float64, trs []*trajectory.Trajectory) error {
	if r == nil {
		return nil
	}
	if err := r.tb.Scalars(int64(iter), time.Now(), m); err != nil {
		return err
	}
	return r.writer.Submit(iter, m, trs)
}

// Flush waits until every submitted iteration is in the store.
func (r *Records) Flush() error { return r.writer.Flush() }

// Results reads the run's final table from its store; the RL method's
// row is named after the estimator.
func (r *Records) Results(estimator string) (*results.Table, error) {
	ms, err := r.store.Metrics()
	if err != nil {
		return nil, err
	}
	return results.Of(ms, "RL ("+estimator+")"), nil
}

// StorePath is the store's file.
func (r *Records) StorePath() string { return r.store.Path() }

// Close flushes the pending writes and closes the writer, the store and
// TensorBoard's file, returning the first error.
func (r *Records) Close() error {
	var first error
	if r.writer != nil {
		first = r.writer.Close()
	}
	if r.store != nil {
		if err := r.store.Close(); first == nil {
			first = err
		}
	}
	if r.tb != nil {
		if err := r.tb.Close(); first == nil {
			first = err
		}
	}
	return first
}
