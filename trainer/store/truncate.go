package store

import "fmt"

// DropAfter deletes, in one transaction, every iteration of the run after
// iter with its trajectories, turns, tool calls and tokens: a run resumed
// from the checkpoint of iteration iter redoes what came after it. While
// another connection holds the write lock it waits as the store's LockWait
// says.
func (s *Store) DropAfter(iter int) (n int, err error) {
	err = s.wait.retry(fmt.Sprintf("drop iterations after %d", iter), func() error {
		n, err = s.dropAfter(iter)
		return err
	})
	return n, err
}

// dropAfter is one attempt of DropAfter.
func (s *Store) dropAfter(iter int) (int, error) {
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
