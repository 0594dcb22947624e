package store

import (
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// A store written at schema 6 (before the evidence columns) opens with
// this build: its rows keep NULL there (not recorded) and read back as 0,
// and new rows store their evidence.
func TestMigrateV6KeepsEvidenceUnrecorded(t *testing.T) {
	path := storeAtVersion(t, 6,
		`INSERT INTO runs (name, config, git_rev, started_at) VALUES ('r', '{}', '', '2026-01-01T00:00:00.000Z')`,
		`INSERT INTO iterations (run, iteration, metrics, created_at) VALUES ('r', 3, '{}', '2026-01-01T00:00:00.000Z')`,
		`INSERT INTO trajectories (run, id, iteration, split, task_id, dataset, hops, group_idx, sample_idx, policy_version,
			question, answer, correct, stop, truncated, error, prompt_tokens, total_tokens, action_tokens, n_turns)
			VALUES ('r', '3-train-0-0', 3, 'train', 'q', 'd', 2, 0, 0, 7, 'q?', 'a', 1, 'answer', 0, '', 2, 5, 3, 1)`,
		`INSERT INTO turns (tid, turn, text, gen_tokens) VALUES (1, 0, 'x', 1)`)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	trs, err := s.LoadIteration(3, trajectory.Train)
	if err != nil {
		t.Fatal(err)
	}
	if len(trs) != 1 || trs[0].Support != 0 || trs[0].Evidence != 0 || trs[0].Turns[0].Evidence != 0 {
		t.Fatalf("read back %+v; want support, evidence and the turn's evidence 0", trs)
	}
	cols, rows, err := QueryReadOnly(path, `SELECT support IS NULL, evidence IS NULL, (SELECT evidence IS NULL FROM turns) FROM trajectories`)
	if err != nil {
		t.Fatal(err)
	}
	if got := formatResult(cols, rows); got != "support IS NULL | evidence IS NULL | (SELECT evidence IS NULL FROM turns)\n1 | 1 | 1" {
		t.Errorf("migrated row:\n%s\nwant NULL in the three evidence columns", got)
	}
}
