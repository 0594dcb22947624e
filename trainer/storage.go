package trainer

import (
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/agentrl/agentrl/tensorboard"
	"github.com/agentrl/agentrl/trainer/results"
	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
)

func (t *Trainer) openStore(gitRev string, resumed bool) error {
	path := t.cfg.Store.Path
	if path == "" {
		path = filepath.Join(t.dir, "store.db")
	}
	// While another connection holds the store's write lock, opening it
	// and every write after wait, warned about, until a stop is asked.
	s, err := store.OpenWaiting(path, store.LockWait{
		Stopped: func() bool { return t.stop.asked() },
		Warn: func(what string, waited time.Duration) {
			t.log.Warn().Str("waiting_to", what).Dur("waited", waited).Str("store", path).
				Msg("the store is locked by another connection: waiting for its write lock (Ctrl-C stops the wait; nothing is lost)")
		},
	})
	if err != nil {
		return err
	}
	t.store = s
	cj, err := json.Marshal(t.cfg)
	if err != nil {
		return err
	}
	if err := s.BeginRun(store.RunInfo{Name: t.cfg.Run.Name, ConfigJSON: string(cj), GitRev: gitRev, Start: time.Now(), Resume: resumed}); err != nil {
		return err
	}
	// Iterations after the checkpoint (or all, for a fresh start) are redone.
	after := -1
	if resumed {
		after = t.state.Iteration
	}
	n, err := s.DropAfter(after)
	if err != nil {
		return err
	}
	if n > 0 {
		t.log.Warn().Int("iterations", n).Int("after", after).Msg("dropped stored iterations that the checkpoint does not cover; they are redone")
	}
	t.writer = store.NewWriter(s, max(1, t.cfg.Store.WriterDepth))
	if t.tb, err = tensorboard.Create(filepath.Join(t.dir, "tb")); err != nil {
		return err
	}
	return nil
}

// submit hands an iteration's metrics and trajectories to the store
// writer, and the metrics to TensorBoard (one scalar per metric, at the
// iteration as step); only rank 0 has them (it holds every rank's
// trajectories).
func (t *Trainer) submit(iter int, m map[string]float64, trs []*trajectory.Trajectory) error {
	if !t.dist.Leader() {
		return nil
	}
	if err := t.tb.Scalars(int64(iter), time.Now(), m); err != nil {
		return err
	}
	return t.writer.Submit(iter, m, trs)
}

// results reads the run's final table from its store.
func (t *Trainer) results() (*results.Table, error) {
	ms, err := t.store.Metrics()
	if err != nil {
		return nil, err
	}
	return results.Of(ms, "RL ("+t.cfg.Algorithm.Estimator+")"), nil
}
