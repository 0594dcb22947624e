package store

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/agentrl/agentrl/trajectory"
)

// WriteIteration stores one iteration of the run begun with BeginRun: its
// metrics (non-finite values are stored as null) and every trajectory with
// its turns, tool calls and token arrays, in one transaction: after an error or a crash
// nothing of the iteration is stored. Each trajectory's Iteration must equal
// iter and its per-token arrays must match its Tokens in length (Values,
// Advantages and Returns may be nil). While another connection holds the
// write lock it waits as the store's LockWait says.
func (s *Store) WriteIteration(iter int, metrics map[string]float64, trajs []*trajectory.Trajectory) error {
	return s.wait.retry(fmt.Sprintf("write iteration %d", iter), func() error { return s.writeIteration(iter, metrics, trajs) })
}

// writeIteration is one attempt of WriteIteration.
func (s *Store) writeIteration(iter int, metrics map[string]float64, trajs []*trajectory.Trajectory) error {
	run, err := s.writeScope()
	if err != nil {
		return fmt.Errorf("write iteration %d to %s: %w", iter, s.path, err)
	}
	for i, t := range trajs {
		if err := validate(t, iter); err != nil {
			return fmt.Errorf("write iteration %d to %s: trajectory %d: %w", iter, s.path, i, err)
		}
	}
	if metrics == nil {
		metrics = map[string]float64{}
	}
	mj, err := encodeFloats(metrics)
	if err != nil {
		return fmt.Errorf("write iteration %d to %s: metrics: %w", iter, s.path, err)
	}
	tx, err := s.db.Begin()
	if err != nil {
		return fmt.Errorf("write iteration %d to %s: %w", iter, s.path, err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec("INSERT INTO iterations (run, iteration, metrics, created_at) VALUES (?, ?, ?, ?)",
		run, iter, mj, time.Now().UTC().Format(timeLayout)); err != nil {
		var se sqlite3.Error
		if errors.As(err, &se) && se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey {
			return fmt.Errorf("write iteration %d of run %s to %s: the iteration is already stored", iter, run, s.path)
		}
		return fmt.Errorf("write iteration %d of run %s to %s: %w", iter, run, s.path, err)
	}
	w, err := prepareInserts(tx)
	if err != nil {
		return fmt.Errorf("write iteration %d to %s: %w", iter, s.path, err)
	}
	defer w.close()
	for _, t := range trajs {
		if err := w.insert(run, t); err != nil {
			return fmt.Errorf("write iteration %d to %s: trajectory %s: %w", iter, s.path, t.ID, err)
		}
	}
	if _, err := tx.Exec(promoteSQL, run, iter); err != nil {
		return fmt.Errorf("write iteration %d to %s: summary columns: %w", iter, s.path, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("write iteration %d to %s: commit: %w", iter, s.path, err)
	}
	return nil
}

// promoteSQL fills an iteration's summary columns from its trajectories.
const promoteSQL = `UPDATE iterations SET
    n_train          = (SELECT COUNT(*)     FROM trajectories t WHERE t.run = iterations.run AND t.iteration = iterations.iteration AND split = 'train'),
    n_eval           = (SELECT COUNT(*)     FROM trajectories t WHERE t.run = iterations.run AND t.iteration = iterations.iteration AND split = 'eval'),
    reward_mean      = (SELECT AVG(reward)  FROM trajectories t WHERE t.run = iterations.run AND t.iteration = iterations.iteration AND split = 'train'),
    eval_reward_mean = (SELECT AVG(reward)  FROM trajectories t WHERE t.run = iterations.run AND t.iteration = iterations.iteration AND split = 'eval'),
    eval_accuracy    = (SELECT AVG(correct) FROM trajectories t WHERE t.run = iterations.run AND t.iteration = iterations.iteration AND split = 'eval')
WHERE run = ? AND iteration = ?`

// validate checks what the schema cannot: a trajectory is present, belongs
// to the iteration and has per-token arrays of one length.
func validate(t *trajectory.Trajectory, iter int) error {
	if t == nil {
		return fmt.Errorf("nil trajectory")
	}
	if t.ID == "" {
		return fmt.Errorf("empty id")
	}
	if t.Iteration != iter {
		return fmt.Errorf("%s has iteration %d", t.ID, t.Iteration)
	}
	if t.Split != trajectory.Train && t.Split != trajectory.Eval {
		return fmt.Errorf("%s has split %q, want %q or %q", t.ID, t.Split, trajectory.Train, trajectory.Eval)
	}
	n := len(t.Tokens)
	for _, a := range []struct {
		name     string
		len      int
		isNil    bool
		optional bool // nil means "not computed"
	}{
		{"Logprobs", len(t.Logprobs), t.Logprobs == nil, false},
		{"Mask", len(t.Mask), t.Mask == nil, false},
		{"TurnOf", len(t.TurnOf), t.TurnOf == nil, false},
		{"Values", len(t.Values), t.Values == nil, true},
		{"Advantages", len(t.Advantages), t.Advantages == nil, true},
		{"Returns", len(t.Returns), t.Returns == nil, true},
		{"TrainLogprobs", len(t.TrainLogprobs), t.TrainLogprobs == nil, true},
		{"Entropies", len(t.Entropies), t.Entropies == nil, true},
	} {
		if a.isNil && (a.optional || n == 0) {
			continue
		}
		if a.len != n {
			return fmt.Errorf("%s has %d tokens but %d %s", t.ID, n, a.len, a.name)
		}
	}
	return nil
}

// inserts holds the prepared statements of one iteration's transaction.
type inserts struct {
	traj, turn, call, tokens, request *sql.Stmt
}

// prepareInserts prepares the row inserts on tx.
func prepareInserts(tx *sql.Tx) (*inserts, error) {
	w := &inserts{}
	var err error
	if w.traj, err = tx.Prepare(`INSERT INTO trajectories (run, id, iteration, split, task_id, dataset, hops,
		group_idx, sample_idx, policy_version, question, gold, answer, correct, outcome, reward, components,
		stop, truncated, error, prompt_tokens, total_tokens, action_tokens, n_turns, duration_ms, dropped, support, evidence,
		continued_from) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
		return nil, err
	}
	if w.turn, err = tx.Prepare(`INSERT INTO turns (tid, turn, text, gen_tokens, process_reward, latency_ms, policy_version,
		evidence) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
		w.close()
		return nil, err
	}
	if w.call, err = tx.Prepare(`INSERT INTO tool_calls (tid, turn, call, tool, args, parse_error, result, ok,
		latency_ms, refs) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
		w.close()
		return nil, err
	}
	if w.tokens, err = tx.Prepare(`INSERT INTO trajectory_tokens (tid, ids, logprobs, mask, turn_of,
		critic_values, advantages, returns, train_logprobs, entropies, routing) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
		w.close()
		return nil, err
	}
	if w.request, err = tx.Prepare(`INSERT INTO gateway_requests (tid, idx, prompt_tokens, completion_tokens, link,
		segment, finish, status, latency_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// close releases the statements that were prepared.
func (w *inserts) close() {
	for _, st := range []*sql.Stmt{w.traj, w.turn, w.call, w.tokens, w.request} {
		if st != nil {
			st.Close()
		}
	}
}

// insert writes one trajectory, its turns with their tool calls, and its
// token arrays.
func (w *inserts) insert(run string, t *trajectory.Trajectory) error {
	gold, err := encodeStrings(t.Gold)
	if err != nil {
		return fmt.Errorf("gold: %w", err)
	}
	comp, err := encodeFloats(t.Components)
	if err != nil {
		return fmt.Errorf("components: %w", err)
	}
	res, err := w.traj.Exec(run, t.ID, t.Iteration, string(t.Split), t.TaskID, t.Dataset, t.Hops,
		t.Group, t.Sample, t.PolicyVersion, t.Question, gold, t.Answer, t.Correct,
		t.Outcome, t.Reward, comp, string(t.Stop), t.Stop.Truncated(), t.Error,
		t.PromptLen, len(t.Tokens), t.ActionTokens(), len(t.Turns), t.DurationMS, t.Dropped, t.Support, t.Evidence, t.ContinuedFrom)
	if err != nil {
		return err
	}
	tid, err := res.LastInsertId()
	if err != nil {
		return err
	}
	for i, u := range t.Turns {
		if _, err := w.turn.Exec(tid, i, u.Text, u.GenTokens, u.ProcessReward, u.LatencyMS, u.PolicyVersion, u.Evidence); err != nil {
			return fmt.Errorf("turn %d: %w", i, err)
		}
		for j, c := range u.Calls {
			refs, err := encodeStrings(c.Refs)
			if err != nil {
				return fmt.Errorf("turn %d call %d refs: %w", i, j, err)
			}
			if _, err := w.call.Exec(tid, i, j, c.Name, c.Args, c.ParseError, c.Result, c.OK, c.LatencyMS, refs); err != nil {
				return fmt.Errorf("turn %d call %d: %w", i, j, err)
			}
		}
	}
	if _, err := w.tokens.Exec(tid, encodeInt32(t.Tokens), encodeFloat32(t.Logprobs), encodeUint8(t.Mask),
		encodeInt16(t.TurnOf), encodeFloat32(t.Values), encodeFloat32(t.Advantages), encodeFloat32(t.Returns),
		encodeFloat32(t.TrainLogprobs), encodeFloat32(t.Entropies), encodeUint8(t.Routing)); err != nil {
		return fmt.Errorf("tokens: %w", err)
	}
	for _, r := range t.Requests {
		if _, err := w.request.Exec(tid, r.Index, r.PromptTokens, r.CompletionTokens, r.Link, r.Segment, r.Finish,
			r.Status, r.LatencyMS); err != nil {
			return fmt.Errorf("gateway request %d: %w", r.Index, err)
		}
	}
	return nil
}
