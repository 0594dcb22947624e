package store

import "fmt"

// DropAfter deletes, in one transaction, every iteration of the run after
// iter with its trajectories, turns, tool calls and tokens: a run resumed
// from the checkpoint of iteration iter redoes what came after it.
func (s *Store) DropAfter(iter int) (int, error) {
	run, err := s.writeScope()
	if err != nil {
		return 0, err
	}
	tx, err := s.db.Begin()
	if err != nil {
		return 0, fmt.Errorf("drop iterations after %d in %s: %w", iter, s.path, err)
	}
	defer tx.Rollback()
	// turns, tool_calls and trajectory_tokens go with their trajectory (ON DELETE CASCADE).
	if _, err := tx.Exec("DELETE FROM trajectories WHERE run = ? AND iteration > ?", run, iter); err != nil {
		return 0, fmt.Errorf("drop trajectories after iteration %d in %s: %w", iter, s.path, err)
	}
	res, err := tx.Exec("DELETE FROM iterations WHERE run = ? AND iteration > ?", run, iter)
	if err != nil {
		return 0, fmt.Errorf("drop iterations after %d in %s: %w", iter, s.path, err)
	}
	n, _ := res.RowsAffected()
	return int(n), tx.Commit()
}
