package store

import (
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// A store written at schema 8 (before continued_from) opens with this
// build: its rows read back as sampled from their prompts, and a
// near-miss continuation written after the migration keeps the episode it
// continues.
func TestMigrateV8ContinuedFrom(t *testing.T) {
	path := storeAtVersion(t, 8,
		`INSERT INTO runs (name, config, git_rev, started_at) VALUES ('r', '{}', '', '2026-01-01T00:00:00.000Z')`,
		`INSERT INTO iterations (run, iteration, metrics, created_at) VALUES ('r', 3, '{}', '2026-01-01T00:00:00.000Z')`,
		`INSERT INTO trajectories (run, id, iteration, split, task_id, dataset, hops, group_idx, sample_idx, policy_version,
			question, answer, correct, stop, truncated, error, prompt_tokens, total_tokens, action_tokens, n_turns)
			VALUES ('r', '3-train-0-0', 3, 'train', 'q', 'd', 2, 0, 0, 7, 'q?', 'a', 0, 'answer', 0, '', 2, 5, 3, 1)`)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	trs, err := s.LoadIteration(3, trajectory.Train)
	if err != nil {
		t.Fatal(err)
	}
	if len(trs) != 1 || trs[0].ContinuedFrom != "" {
		t.Fatalf("read back %+v; want one episode continuing none", trs)
	}
	c := &trajectory.Trajectory{ID: "4-train-0-2", Iteration: 4, Split: trajectory.Train, Group: 0, Sample: 2,
		ContinuedFrom: "4-train-0-1", Stop: trajectory.StopAnswer}
	if err := s.BeginRun(RunInfo{Name: "r", Resume: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteIteration(4, nil, []*trajectory.Trajectory{c}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	cols, rows, err := QueryReadOnly(path, `SELECT id, continued_from FROM trajectories ORDER BY tid`)
	if err != nil {
		t.Fatal(err)
	}
	if got := formatResult(cols, rows); got != "id | continued_from\n3-train-0-0 | \n4-train-0-2 | 4-train-0-1" {
		t.Errorf("stored:\n%s\nwant '' for the migrated row and 4-train-0-1 for the continuation", got)
	}
}
