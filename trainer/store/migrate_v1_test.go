package store

import (
	"database/sql"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
)

// v1DDL is version 1 of the schema as it was released, the one stores
// written before tool calls had rows of their own hold.
const v1DDL = `
CREATE TABLE runs (
    name       TEXT PRIMARY KEY,
    config     TEXT NOT NULL CHECK (json_valid(config)),
    git_rev    TEXT NOT NULL,
    started_at TEXT NOT NULL,
    resumed_at TEXT,
    resumes    INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE iterations (
    run              TEXT NOT NULL REFERENCES runs(name),
    iteration        INTEGER NOT NULL,
    metrics          TEXT NOT NULL CHECK (json_valid(metrics)),
    n_train          INTEGER NOT NULL DEFAULT 0,
    n_eval           INTEGER NOT NULL DEFAULT 0,
    reward_mean      REAL,
    eval_reward_mean REAL,
    eval_accuracy    REAL,
    created_at       TEXT NOT NULL,
    PRIMARY KEY (run, iteration)
);

CREATE TABLE trajectories (
    tid            INTEGER PRIMARY KEY,
    run            TEXT NOT NULL,
    id             TEXT NOT NULL,
    iteration      INTEGER NOT NULL,
    split          TEXT NOT NULL CHECK (split IN ('train', 'eval')),
    task_id        TEXT NOT NULL,
    dataset        TEXT NOT NULL,
    hops           INTEGER NOT NULL,
    group_idx      INTEGER NOT NULL,
    sample_idx     INTEGER NOT NULL,
    policy_version INTEGER NOT NULL,
    question       TEXT NOT NULL,
    gold           TEXT CHECK (gold IS NULL OR json_valid(gold)),
    answer         TEXT NOT NULL,
    correct        INTEGER NOT NULL,
    outcome        REAL,
    reward         REAL,
    components     TEXT CHECK (components IS NULL OR json_valid(components)),
    stop           TEXT NOT NULL,
    truncated      INTEGER NOT NULL,
    error          TEXT NOT NULL,
    prompt_tokens  INTEGER NOT NULL,
    total_tokens   INTEGER NOT NULL,
    action_tokens  INTEGER NOT NULL,
    n_turns        INTEGER NOT NULL,
    duration_ms    REAL,
    UNIQUE (run, id),
    FOREIGN KEY (run, iteration) REFERENCES iterations(run, iteration)
);
CREATE INDEX trajectories_by_iteration ON trajectories(run, iteration, split);

CREATE TABLE turns (
    tid            INTEGER NOT NULL REFERENCES trajectories(tid) ON DELETE CASCADE,
    turn           INTEGER NOT NULL,
    text           TEXT NOT NULL,
    gen_tokens     INTEGER NOT NULL,
    tool           TEXT NOT NULL,
    args           TEXT NOT NULL,
    parse_error    TEXT NOT NULL,
    observation    TEXT NOT NULL,
    ok             INTEGER NOT NULL,
    process_reward REAL,
    latency_ms     REAL,
    PRIMARY KEY (tid, turn)
) WITHOUT ROWID;

CREATE TABLE trajectory_tokens (
    tid           INTEGER PRIMARY KEY REFERENCES trajectories(tid) ON DELETE CASCADE,
    ids           BLOB,
    logprobs      BLOB,
    mask          BLOB,
    turn_of       BLOB,
    critic_values BLOB,
    advantages    BLOB,
    returns       BLOB
);

CREATE VIEW reward_by_iteration AS
SELECT run, iteration, split,
       COUNT(*)          AS n,
       AVG(reward)       AS reward_mean,
       AVG(outcome)      AS outcome_mean,
       AVG(correct)      AS accuracy,
       AVG(truncated)    AS truncated_rate,
       AVG(n_turns)      AS turns_mean,
       AVG(total_tokens) AS tokens_mean
FROM trajectories
GROUP BY run, iteration, split;

CREATE VIEW tool_success AS
SELECT t.run,
       CASE WHEN u.tool = '' THEN '(unparsed)' ELSE u.tool END AS tool,
       COUNT(*)                AS calls,
       SUM(u.ok)               AS ok,
       COUNT(*) - SUM(u.ok)    AS failures,
       AVG(u.ok)               AS success_rate,
       SUM(u.parse_error <> '') AS parse_errors,
       AVG(u.latency_ms)       AS latency_ms_mean
FROM turns u JOIN trajectories t USING (tid)
WHERE u.tool <> '' OR u.parse_error <> ''
GROUP BY t.run, 2;

CREATE VIEW answer_changes AS
WITH e AS (
    SELECT run, dataset, task_id, sample_idx, question, iteration, answer, correct,
           LAG(iteration) OVER w AS prev_iteration,
           LAG(answer)    OVER w AS prev_answer,
           LAG(correct)   OVER w AS prev_correct
    FROM trajectories
    WHERE split = 'eval'
    WINDOW w AS (PARTITION BY run, dataset, task_id, sample_idx ORDER BY iteration)
)
SELECT run, dataset, task_id, sample_idx, question,
       prev_iteration AS from_iteration, iteration AS to_iteration,
       prev_answer AS old_answer, answer AS new_answer,
       prev_correct AS was_correct, correct AS now_correct
FROM e
WHERE prev_iteration IS NOT NULL AND answer <> prev_answer;

CREATE VIEW accuracy_by_hops AS
SELECT run, iteration, split, hops,
       COUNT(*)     AS n,
       AVG(correct) AS accuracy,
       AVG(reward)  AS reward_mean
FROM trajectories
GROUP BY run, iteration, split, hops;
`

// A released migration step is never edited: stores at version 1 exist
// with exactly this schema.
func TestReleasedSchemaV1Unchanged(t *testing.T) {
	if schemaV1 != v1DDL {
		t.Error("schemaV1 differs from the version 1 schema as released: add a new migration step instead")
	}
}

// v1Rows fills a version 1 store: one run, one iteration, two trajectories
// whose turns cover every way version 1 flattened a turn's tool calls.
const v1Rows = `
INSERT INTO runs (name, config, git_rev, started_at) VALUES ('old', '{}', 'abc', '2025-01-01T00:00:00.000Z');
INSERT INTO iterations (run, iteration, metrics, created_at) VALUES ('old', 0, '{}', '2025-01-01T00:00:00.000Z');
INSERT INTO trajectories (tid, run, id, iteration, split, task_id, dataset, hops, group_idx, sample_idx,
    policy_version, question, answer, correct, stop, truncated, error, prompt_tokens, total_tokens,
    action_tokens, n_turns)
VALUES (1, 'old', '0-train-0-0', 0, 'train', 't1', 'hotpotqa', 2, 0, 0, 0, 'q1', 'a1', 0, 'answer', 0, '', 4, 40, 20, 5),
       (2, 'old', '0-train-0-1', 0, 'train', 't1', 'hotpotqa', 2, 0, 1, 0, 'q1', '', 0, 'max_turns', 1, '', 4, 12, 6, 1);
INSERT INTO turns (tid, turn, text, gen_tokens, tool, args, parse_error, observation, ok, process_reward, latency_ms)
VALUES
    -- one call that succeeded
    (1, 0, 't0', 3, 'search', '{"query":"a"}', '', 'passage A', 1, 0.1, 12.5),
    -- two calls, one failed: names comma-joined, arguments an array, ok ANDed
    (1, 1, 't1', 4, 'search,lookup', '[{"query":"b"},{"title":"B"}]', '', 'passage B' || char(10) || 'Error: no such title', 0, 0, 30),
    -- calls that did not parse
    (1, 2, 't2', 2, '', '', 'invalid JSON', 'Error: invalid JSON', 0, -0.1, 0.5),
    -- three calls that all succeeded
    (1, 3, 't3', 5, 'search,search,lookup', '[{"query":"c"},{"query":"d"},{"title":"C"}]', '', 'x' || char(10) || 'y' || char(10) || 'z', 1, 0.3, NULL),
    -- the answer, no call
    (1, 4, '<answer>a1</answer>', 6, '', '', '', '', 0, 0, NULL),
    -- one call that failed
    (2, 0, 'u0', 6, 'lookup', '{"title":"D"}', '', 'No passage is titled "D"', 0, -0.1, 7);
`

// writeV1Store builds a store at schema version 1 from v1DDL and v1Rows.
func writeV1Store(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	db, err := sql.Open("sqlite3", uri(path)+"?"+rwParams)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{v1DDL, "PRAGMA user_version = 1", v1Rows} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// unknown stands for a latency the store holds as NULL (read back as NaN),
// so that turns compare with reflect.DeepEqual.
const unknown = -1

// withUnknown replaces NaN latencies by unknown.
func withUnknown(turns []trajectory.Turn) []trajectory.Turn {
	for i := range turns {
		if math.IsNaN(turns[i].LatencyMS) {
			turns[i].LatencyMS = unknown
		}
		for j := range turns[i].Calls {
			if math.IsNaN(turns[i].Calls[j].LatencyMS) {
				turns[i].Calls[j].LatencyMS = unknown
			}
		}
	}
	return turns
}

// Opening a version 1 store migrates it: each flattened turn becomes one
// row per call, as far as version 1 kept what each call did.
func TestOpenMigratesV1Store(t *testing.T) {
	path := writeV1Store(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var v int
	if err := s.db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != SchemaVersion() {
		t.Fatalf("user_version %d, %v; want %d", v, err, SchemaVersion())
	}

	got, err := s.Get("0-train-0-0")
	if err != nil {
		t.Fatal(err)
	}
	want := []trajectory.Turn{
		{Text: "t0", GenTokens: 3, ProcessReward: 0.1, LatencyMS: 12.5, Calls: []trajectory.ToolCall{
			// The step's latency becomes the call's.
			{Name: "search", Args: `{"query":"a"}`, Result: "passage A", OK: true, LatencyMS: 12.5}}},
		{Text: "t1", GenTokens: 4, LatencyMS: 30, Calls: []trajectory.ToolCall{
			// Which call failed, each call's response and latency are lost:
			// the joined observation goes to the first call.
			{Name: "search", Args: `{"query":"b"}`, Result: "passage B\nError: no such title", LatencyMS: unknown},
			{Name: "lookup", Args: `{"title":"B"}`, LatencyMS: unknown}}},
		{Text: "t2", GenTokens: 2, ProcessReward: -0.1, LatencyMS: 0.5, Calls: []trajectory.ToolCall{
			{ParseError: "invalid JSON", Result: "Error: invalid JSON", LatencyMS: 0.5}}},
		{Text: "t3", GenTokens: 5, ProcessReward: 0.3, LatencyMS: unknown, Calls: []trajectory.ToolCall{
			{Name: "search", Args: `{"query":"c"}`, Result: "x\ny\nz", OK: true, LatencyMS: unknown},
			{Name: "search", Args: `{"query":"d"}`, OK: true, LatencyMS: unknown},
			{Name: "lookup", Args: `{"title":"C"}`, OK: true, LatencyMS: unknown}}},
		{Text: "<answer>a1</answer>", GenTokens: 6, LatencyMS: unknown},
	}
	if turns := withUnknown(got.Turns); !reflect.DeepEqual(turns, want) {
		t.Errorf("migrated turns\n%+v\nwant\n%+v", turns, want)
	}
	other, err := s.Get("0-train-0-1")
	if err != nil {
		t.Fatal(err)
	}
	wantOther := []trajectory.ToolCall{{Name: "lookup", Args: `{"title":"D"}`, Result: `No passage is titled "D"`, LatencyMS: 7}}
	if len(other.Turns) != 1 || !reflect.DeepEqual(other.Turns[0].Calls, wantOther) {
		t.Errorf("migrated turns of 0-train-0-1: %+v; want the one failed lookup", other.Turns)
	}

	// Success that cannot be told apart is NULL, not a guess; the turn's
	// call columns are gone; tool_success counts calls, leaving NULL out.
	for _, c := range []struct{ query, want string }{
		{"SELECT turn, call, ok FROM tool_calls WHERE ok IS NULL ORDER BY tid, turn, call", "turn | call | ok\n1 | 0 | NULL\n1 | 1 | NULL"},
		{"SELECT group_concat(name, ' ') AS columns FROM pragma_table_info('turns')", "columns\ntid turn text gen_tokens process_reward latency_ms policy_version evidence"},
		{"SELECT tool, calls, ok, failures, parse_errors FROM tool_success ORDER BY tool",
			"tool | calls | ok | failures | parse_errors\n(unparsed) | 1 | 0 | 1 | 1\nlookup | 3 | 1 | 1 | 0\nsearch | 4 | 3 | 0 | 0"},
	} {
		cols, rows, err := QueryReadOnly(path, c.query)
		if err != nil {
			t.Fatal(err)
		}
		if got := formatResult(cols, rows); got != c.want {
			t.Errorf("%s:\n%s\nwant\n%s", c.query, got, c.want)
		}
	}

	// The migrated store takes new iterations with their calls.
	if err := s.BeginRun(RunInfo{Name: "old"}); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteIteration(1, nil, synthBatch(1, 2, 30, 2)); err != nil {
		t.Fatalf("write to the migrated store: %v", err)
	}
	var n int
	if err := s.db.QueryRow("SELECT COUNT(*) FROM tool_calls JOIN trajectories USING (tid) WHERE iteration = 1").Scan(&n); err != nil || n != 4 {
		t.Errorf("%d calls stored for iteration 1, %v; want 2 trajectories x 2 turns x 1 call", n, err)
	}
}

// Dropping a resumed run's later iterations takes their calls with them.
func TestDropAfterDeletesToolCalls(t *testing.T) {
	s := openTemp(t)
	if err := s.BeginRun(RunInfo{Name: "d"}); err != nil {
		t.Fatal(err)
	}
	for it := range 2 {
		if err := s.WriteIteration(it, nil, synthBatch(it, 2, 30, 3)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.DropAfter(0); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRow("SELECT COUNT(*) FROM tool_calls").Scan(&n); err != nil || n != 6 {
		t.Errorf("%d calls left, %v; want iteration 0's 2 trajectories x 3 turns x 1 call", n, err)
	}
}
