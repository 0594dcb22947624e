package store

import (
	"database/sql"
	"fmt"
	"time"
)

// IterationMetrics is one iteration's row: the metrics the trainer logged
// and the summary columns the store computed from the trajectories.
type IterationMetrics struct {
	Iteration      int
	Metrics        map[string]float64 // as written; non-finite values read back as NaN
	NTrain, NEval  int                // trajectories per split
	RewardMean     float64            // mean total reward of the train trajectories, NaN when none
	EvalRewardMean float64            // mean total reward of the eval trajectories, NaN when none
	EvalAccuracy   float64            // fraction of eval answers matching a gold answer, NaN when none
	CreatedAt      time.Time
}

// Metrics returns every stored iteration of the run in order, for plots and
// reports.
func (s *Store) Metrics() ([]IterationMetrics, error) {
	run, ok, err := s.scope()
	if err != nil || !ok {
		return nil, err
	}
	rows, err := s.db.Query(`SELECT iteration, metrics, n_train, n_eval, reward_mean, eval_reward_mean,
		eval_accuracy, created_at FROM iterations WHERE run = ? ORDER BY iteration`, run)
	if err != nil {
		return nil, fmt.Errorf("metrics of run %s in %s: %w", run, s.path, err)
	}
	defer rows.Close()
	var out []IterationMetrics
	for rows.Next() {
		var (
			m                  IterationMetrics
			metrics, created   string
			reward, eval, accu sql.NullFloat64
		)
		if err := rows.Scan(&m.Iteration, &metrics, &m.NTrain, &m.NEval, &reward, &eval, &accu, &created); err != nil {
			return nil, fmt.Errorf("metrics of run %s in %s: %w", run, s.path, err)
		}
		if m.Metrics, err = decodeFloats(&metrics); err != nil {
			return nil, fmt.Errorf("metrics of run %s in %s: iteration %d: %w", run, s.path, m.Iteration, err)
		}
		if m.CreatedAt, err = time.Parse(timeLayout, created); err != nil {
			return nil, fmt.Errorf("metrics of run %s in %s: iteration %d: %w", run, s.path, m.Iteration, err)
		}
		m.RewardMean, m.EvalRewardMean, m.EvalAccuracy = orNaN(reward), orNaN(eval), orNaN(accu)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("metrics of run %s in %s: %w", run, s.path, err)
	}
	return out, nil
}
