package store

import (
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/agentrl/agentrl/trajectory"
)

// LoadIteration returns every trajectory of an iteration and split ("" for
// both), in the order they were written, with every field as it was
// written, so an update can be re-run from the store alone. Exceptions:
// NaN and null read back as NaN, and a trajectory without turns (a turn
// without calls, a call without refs) reads back with nil Turns (Calls,
// Refs).
func (s *Store) LoadIteration(iter int, split trajectory.Split) ([]*trajectory.Trajectory, error) {
	run, ok, err := s.scope()
	if err != nil {
		return nil, fmt.Errorf("load iteration %d from %s: %w", iter, s.path, err)
	}
	if !ok {
		return nil, nil
	}
	where, args := "run = ? AND iteration = ?", []any{run, iter}
	if split != "" {
		where, args = where+" AND split = ?", append(args, string(split))
	}
	ts, err := s.load(where, args)
	if err != nil {
		return nil, fmt.Errorf("load iteration %d from %s: %w", iter, s.path, err)
	}
	return ts, nil
}

// Get returns one trajectory of the run by its id; a missing one is an
// error wrapping ErrNotFound.
func (s *Store) Get(id string) (*trajectory.Trajectory, error) {
	run, ok, err := s.scope()
	if err != nil {
		return nil, fmt.Errorf("get %s from %s: %w", id, s.path, err)
	}
	if !ok {
		return nil, fmt.Errorf("get %s from %s: %w", id, s.path, ErrNotFound)
	}
	ts, err := s.load("run = ? AND id = ?", []any{run, id})
	if err != nil {
		return nil, fmt.Errorf("get %s from %s: %w", id, s.path, err)
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("get %s from %s: %w", id, s.path, ErrNotFound)
	}
	return ts[0], nil
}

// load reads the trajectories matching where (a condition on the
// trajectories table), then their token arrays, turns and tool calls, in
// tid order.
func (s *Store) load(where string, args []any) (ts []*trajectory.Trajectory, err error) {
	// One snapshot for the four reads: a transaction, which begins by
	// taking the write lock (the store's transactions are IMMEDIATE).
	err = s.wait.retry("read trajectories", func() error {
		ts, err = s.loadOnce(where, args)
		return err
	})
	return ts, err
}

// loadOnce is one attempt of load.
func (s *Store) loadOnce(where string, args []any) ([]*trajectory.Trajectory, error) {
	tx, err := s.db.Begin()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	ts, byTID, err := loadTrajectories(tx, where, args)
	if err != nil || len(ts) == 0 {
		return ts, err
	}
	sub := "tid IN (SELECT tid FROM trajectories WHERE " + where + ")"
	if err := loadTokens(tx, sub, args, byTID); err != nil {
		return nil, err
	}
	if err := loadTurns(tx, sub, args, byTID); err != nil {
		return nil, err
	}
	if err := loadCalls(tx, sub, args, byTID); err != nil {
		return nil, err
	}
	if err := loadRequests(tx, sub, args, byTID); err != nil {
		return nil, err
	}
	return ts, nil
}

// loadRequests reads the gateway requests of the selected trajectories, in
// request order.
func loadRequests(tx *sql.Tx, sub string, args []any, byTID map[int64]*trajectory.Trajectory) error {
	rows, err := tx.Query(`SELECT tid, idx, prompt_tokens, completion_tokens, link, segment, finish, status, latency_ms
		FROM gateway_requests WHERE `+sub+` ORDER BY tid, idx`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			tid     int64
			r       trajectory.Request
			latency sql.NullFloat64
		)
		if err := rows.Scan(&tid, &r.Index, &r.PromptTokens, &r.CompletionTokens, &r.Link, &r.Segment, &r.Finish, &r.Status, &latency); err != nil {
			return err
		}
		r.LatencyMS = orNaN(latency)
		if t := byTID[tid]; t != nil {
			t.Requests = append(t.Requests, r)
		}
	}
	return rows.Err()
}

// loadTrajectories reads the trajectory rows and indexes them by tid.
func loadTrajectories(tx *sql.Tx, where string, args []any) ([]*trajectory.Trajectory, map[int64]*trajectory.Trajectory, error) {
	rows, err := tx.Query(`SELECT tid, id, iteration, split, task_id, dataset, hops, group_idx, sample_idx,
		policy_version, question, gold, answer, correct, outcome, reward, components, stop, error, prompt_tokens,
		duration_ms, dropped, support, evidence, continued_from FROM trajectories WHERE `+where+` ORDER BY tid`, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var ts []*trajectory.Trajectory
	byTID := map[int64]*trajectory.Trajectory{}
	for rows.Next() {
		t := &trajectory.Trajectory{}
		var (
			tid                       int64
			split, stop               string
			gold, comp                *string
			outcome, reward, duration sql.NullFloat64
			support, evidence         sql.NullInt64
		)
		if err := rows.Scan(&tid, &t.ID, &t.Iteration, &split, &t.TaskID, &t.Dataset, &t.Hops, &t.Group,
			&t.Sample, &t.PolicyVersion, &t.Question, &gold, &t.Answer, &t.Correct, &outcome, &reward, &comp, &stop,
			&t.Error, &t.PromptLen, &duration, &t.Dropped, &support, &evidence, &t.ContinuedFrom); err != nil {
			return nil, nil, err
		}
		t.Support, t.Evidence = int(support.Int64), int(evidence.Int64) // 0 where not recorded
		t.Split, t.Stop = trajectory.Split(split), trajectory.StopReason(stop)
		t.Outcome, t.Reward, t.DurationMS = orNaN(outcome), orNaN(reward), orNaN(duration)
		if t.Gold, err = decodeStrings(gold); err != nil {
			return nil, nil, fmt.Errorf("trajectory %s gold: %w", t.ID, err)
		}
		if t.Components, err = decodeFloats(comp); err != nil {
			return nil, nil, fmt.Errorf("trajectory %s components: %w", t.ID, err)
		}
		ts = append(ts, t)
		byTID[tid] = t
	}
	return ts, byTID, rows.Err()
}

// loadTokens decodes the token blobs of the selected trajectories.
func loadTokens(tx *sql.Tx, sub string, args []any, byTID map[int64]*trajectory.Trajectory) error {
	rows, err := tx.Query(`SELECT tid, ids, logprobs, mask, turn_of, critic_values, advantages, returns,
		train_logprobs, entropies, routing FROM trajectory_tokens WHERE `+sub, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			tid                                    int64
			ids, lp, mask, turnOf, vals, adv, rets []byte
			trainLP, ent, routing                  []byte
		)
		if err := rows.Scan(&tid, &ids, &lp, &mask, &turnOf, &vals, &adv, &rets, &trainLP, &ent, &routing); err != nil {
			return err
		}
		t := byTID[tid]
		if t == nil {
			continue
		}
		t.Mask, t.Routing = mask, routing
		var errs [8]error
		t.Tokens, errs[0] = decodeInt32(ids)
		t.Logprobs, errs[1] = decodeFloat32(lp)
		t.TurnOf, errs[2] = decodeInt16(turnOf)
		t.Values, errs[3] = decodeFloat32(vals)
		t.Advantages, errs[4] = decodeFloat32(adv)
		t.Returns, errs[5] = decodeFloat32(rets)
		t.TrainLogprobs, errs[6] = decodeFloat32(trainLP)
		t.Entropies, errs[7] = decodeFloat32(ent)
		if err := errors.Join(errs[:]...); err != nil {
			return fmt.Errorf("trajectory %s tokens: %w", t.ID, err)
		}
	}
	return rows.Err()
}

// loadTurns reads the turns of the selected trajectories in turn order.
func loadTurns(tx *sql.Tx, sub string, args []any, byTID map[int64]*trajectory.Trajectory) error {
	rows, err := tx.Query(`SELECT tid, turn, text, gen_tokens, process_reward, latency_ms, policy_version, evidence
		FROM turns WHERE `+sub+` ORDER BY tid, turn`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			tid, turn       int64
			u               trajectory.Turn
			reward, latency sql.NullFloat64
			evidence        sql.NullInt64
		)
		if err := rows.Scan(&tid, &turn, &u.Text, &u.GenTokens, &reward, &latency, &u.PolicyVersion, &evidence); err != nil {
			return err
		}
		u.Evidence = int(evidence.Int64) // 0 where not recorded
		u.ProcessReward, u.LatencyMS = orNaN(reward), orNaN(latency)
		t := byTID[tid]
		if t == nil {
			continue
		}
		if int(turn) != len(t.Turns) {
			return fmt.Errorf("trajectory %s: turn %d stored where turn %d was expected", t.ID, turn, len(t.Turns))
		}
		t.Turns = append(t.Turns, u)
	}
	return rows.Err()
}

// loadCalls reads the tool calls of the selected trajectories into their
// turns, in call order. A call's success that a migration could not
// recover (NULL) reads as false.
func loadCalls(tx *sql.Tx, sub string, args []any, byTID map[int64]*trajectory.Trajectory) error {
	rows, err := tx.Query(`SELECT tid, turn, call, tool, args, parse_error, result, ok, latency_ms, refs
		FROM tool_calls WHERE `+sub+` ORDER BY tid, turn, call`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			tid, turn, call int64
			c               trajectory.ToolCall
			ok              sql.NullBool
			latency         sql.NullFloat64
			refs            *string
		)
		if err := rows.Scan(&tid, &turn, &call, &c.Name, &c.Args, &c.ParseError, &c.Result, &ok, &latency, &refs); err != nil {
			return err
		}
		t := byTID[tid]
		if t == nil {
			continue
		}
		if turn < 0 || int(turn) >= len(t.Turns) {
			return fmt.Errorf("trajectory %s: a call of turn %d, which has %d turns", t.ID, turn, len(t.Turns))
		}
		u := &t.Turns[turn]
		if int(call) != len(u.Calls) {
			return fmt.Errorf("trajectory %s turn %d: call %d stored where call %d was expected", t.ID, turn, call, len(u.Calls))
		}
		c.OK, c.LatencyMS = ok.Bool, orNaN(latency)
		if c.Refs, err = decodeStrings(refs); err != nil {
			return fmt.Errorf("trajectory %s turn %d call %d refs: %w", t.ID, turn, call, err)
		}
		u.Calls = append(u.Calls, c)
	}
	return rows.Err()
}

// orNaN reads a nullable REAL: SQLite stores NaN as NULL.
func orNaN(v sql.NullFloat64) float64 {
	if !v.Valid {
		return math.NaN()
	}
	return v.Float64
}
