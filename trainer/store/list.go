package store

import (
	"database/sql"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/trajectory"
)

// ListFilter selects trajectories for List. Zero values select everything.
type ListFilter struct {
	Iteration *int             // only this iteration
	Split     trajectory.Split // only this split
	Limit     int              // at most this many, 0 for all
	Where     string           // an SQL condition on the trajectories table, e.g. "correct = 0 AND n_turns > 2"
	Args      []any            // values for the ? placeholders in Where
}

// Summary is one trajectory's headline: enough to pick one to Get or Render.
type Summary struct {
	ID           string
	Iteration    int
	Split        trajectory.Split
	TaskID       string
	Dataset      string
	Hops         int
	Group        int
	Sample       int
	Answer       string
	Correct      bool // the answer matches a gold answer after normalisation
	Outcome      float64
	Reward       float64
	Stop         trajectory.StopReason
	Turns        int
	Tokens       int
	ActionTokens int
	DurationMS   float64
}

// List returns the summaries of the run's trajectories that pass the
// filter, in the order they were written. Where runs on a read-only
// connection, so it can select anything but change nothing.
func (s *Store) List(f ListFilter) ([]Summary, error) {
	run, ok, err := s.scope()
	if err != nil || !ok {
		return nil, err
	}
	conds, args := []string{"run = ?"}, []any{run}
	if f.Iteration != nil {
		conds, args = append(conds, "iteration = ?"), append(args, *f.Iteration)
	}
	if f.Split != "" {
		conds, args = append(conds, "split = ?"), append(args, string(f.Split))
	}
	if strings.TrimSpace(f.Where) != "" {
		conds, args = append(conds, "("+f.Where+")"), append(args, f.Args...)
	}
	q := `SELECT id, iteration, split, task_id, dataset, hops, group_idx, sample_idx, answer, correct,
		outcome, reward, stop, n_turns, total_tokens, action_tokens, duration_ms
		FROM trajectories WHERE ` + strings.Join(conds, " AND ") + " ORDER BY tid"
	if f.Limit > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Limit)
	}
	out, err := s.list(q, args)
	if err != nil {
		return nil, fmt.Errorf("list trajectories in %s: %w", s.path, explainRefusal(err))
	}
	return out, nil
}

// list runs a summary query on the read-only handle.
func (s *Store) list(q string, args []any) ([]Summary, error) {
	rows, err := s.ro.Query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Summary
	for rows.Next() {
		var (
			m                         Summary
			split, stop               string
			outcome, reward, duration sql.NullFloat64
		)
		if err := rows.Scan(&m.ID, &m.Iteration, &split, &m.TaskID, &m.Dataset, &m.Hops, &m.Group, &m.Sample,
			&m.Answer, &m.Correct, &outcome, &reward, &stop, &m.Turns, &m.Tokens, &m.ActionTokens, &duration); err != nil {
			return nil, err
		}
		m.Split, m.Stop = trajectory.Split(split), trajectory.StopReason(stop)
		m.Outcome, m.Reward, m.DurationMS = orNaN(outcome), orNaN(reward), orNaN(duration)
		out = append(out, m)
	}
	return out, rows.Err()
}
