package store

// schemaV1 is the first version of the schema. SCHEMA.md documents it
// column by column; the token blobs' layout is in blob.go.
const schemaV1 = `
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

// schemaV2 gives each tool call a row of its own (tool_calls), where
// version 1 flattened a turn's calls into its row: names comma-joined,
// arguments a JSON array, success ANDed, one latency and one observation
// for the turn. It moves version 1's calls over as well as they can be
// recovered (SCHEMA.md says what cannot be), then drops the turn's call
// columns and rebuilds tool_success on the new table.
const schemaV2 = `
CREATE TABLE tool_calls (
    tid         INTEGER NOT NULL,
    turn        INTEGER NOT NULL,
    call        INTEGER NOT NULL,
    tool        TEXT NOT NULL,
    args        TEXT NOT NULL,
    parse_error TEXT NOT NULL,
    result      TEXT NOT NULL,
    ok          INTEGER,
    latency_ms  REAL,
    refs        TEXT CHECK (refs IS NULL OR json_valid(refs)),
    PRIMARY KEY (tid, turn, call),
    FOREIGN KEY (tid, turn) REFERENCES turns(tid, turn) ON DELETE CASCADE
) WITHOUT ROWID;

-- A turn with one call, or whose calls did not parse: that call, whole.
INSERT INTO tool_calls (tid, turn, call, tool, args, parse_error, result, ok, latency_ms)
SELECT tid, turn, 0, tool, args, parse_error, observation, ok, latency_ms
FROM turns
WHERE parse_error <> '' OR (tool <> '' AND instr(tool, ',') = 0);

-- A turn with several calls: the names split at the commas, the arguments
-- taken from the JSON array in order. The joined observation cannot be
-- split, so the first call carries it; success is known only when all
-- succeeded, and a call's latency not at all.
WITH RECURSIVE names (tid, turn, call, name, rest) AS (
    SELECT tid, turn, 0, substr(tool, 1, instr(tool, ',') - 1), substr(tool, instr(tool, ',') + 1)
    FROM turns
    WHERE parse_error = '' AND instr(tool, ',') > 0
    UNION ALL
    SELECT tid, turn, call + 1, substr(rest, 1, instr(rest || ',', ',') - 1), substr(rest, instr(rest || ',', ',') + 1)
    FROM names
    WHERE rest <> ''
)
INSERT INTO tool_calls (tid, turn, call, tool, args, parse_error, result, ok, latency_ms)
SELECT n.tid, n.turn, n.call, n.name,
       CASE WHEN json_valid(u.args) THEN COALESCE(u.args -> n.call, '') ELSE '' END,
       '',
       CASE WHEN n.call = 0 THEN u.observation ELSE '' END,
       CASE WHEN u.ok THEN 1 END,
       NULL
FROM names n JOIN turns u USING (tid, turn);

DROP VIEW tool_success;
ALTER TABLE turns DROP COLUMN tool;
ALTER TABLE turns DROP COLUMN args;
ALTER TABLE turns DROP COLUMN parse_error;
ALTER TABLE turns DROP COLUMN observation;
ALTER TABLE turns DROP COLUMN ok;

CREATE VIEW tool_success AS
SELECT t.run,
       CASE WHEN c.tool = '' THEN '(unparsed)' ELSE c.tool END AS tool,
       COUNT(*)                 AS calls,
       SUM(c.ok)                AS ok,
       SUM(NOT c.ok)            AS failures,
       AVG(c.ok)                AS success_rate,
       SUM(c.parse_error <> '') AS parse_errors,
       AVG(c.latency_ms)        AS latency_ms_mean
FROM tool_calls c JOIN trajectories t USING (tid)
GROUP BY t.run, 2;
`

// schemaV3 stores two more per-token arrays of the training forward: the
// recomputed log-probabilities of the action tokens (against the behaviour
// logprobs they measure the rollout/training mismatch) and the policy's
// entropy there. Older rows keep NULL: not computed.
const schemaV3 = `
ALTER TABLE trajectory_tokens ADD COLUMN train_logprobs BLOB;
ALTER TABLE trajectory_tokens ADD COLUMN entropies BLOB;
`

// schemaV4 adds the indexes that trainer inspect's trajectory table needs
// on a large store: the trajectories that called a tool (and the distinct
// tool names, by skipping through the index), and the trajectories of a
// run by reward (its sort).
const schemaV4 = `
CREATE INDEX tool_calls_by_tool ON tool_calls(tool, tid);
CREATE INDEX trajectories_by_reward ON trajectories(run, reward);
`

// schemaV5 adds the gateway requests of agent program episodes
// (agent.command): one row per request, on the episode's first segment,
// with how the token ledger took it.
const schemaV5 = `
CREATE TABLE gateway_requests (
    tid               INTEGER NOT NULL REFERENCES trajectories(tid) ON DELETE CASCADE,
    idx               INTEGER NOT NULL,
    prompt_tokens     INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    link              TEXT NOT NULL,
    segment           INTEGER NOT NULL,
    finish            TEXT NOT NULL,
    status            INTEGER NOT NULL,
    latency_ms        REAL,
    PRIMARY KEY (tid, idx)
);
`

// schemaV6 records the policy version that sampled each turn (a stored
// run before it was synchronous: every turn was sampled by its
// trajectory's version, which fills the new column) and why dynamic
// sampling left a trajectory out of the update (” for none).
const schemaV6 = `
ALTER TABLE turns ADD COLUMN policy_version INTEGER NOT NULL DEFAULT 0;
UPDATE turns SET policy_version = (SELECT policy_version FROM trajectories t WHERE t.tid = turns.tid);
ALTER TABLE trajectories ADD COLUMN dropped TEXT NOT NULL DEFAULT '';
`

// schemaV7 records the evidence an episode gathered: per turn, the
// supporting passages of its task first retrieved there (what
// env.rewards.support credits); per trajectory, how many the task names
// and how many the whole episode retrieved. Older rows keep NULL: not
// recorded.
const schemaV7 = `
ALTER TABLE turns ADD COLUMN evidence INTEGER;
ALTER TABLE trajectories ADD COLUMN support INTEGER;
ALTER TABLE trajectories ADD COLUMN evidence INTEGER;
`

// schemaV8 stores the experts each token of a trajectory took at the
// sparse layers of a mixture-of-experts policy while the rollout computed
// it (algorithm.routing_replay; torch.Routing.Bytes). Other rows keep
// NULL: not recorded.
const schemaV8 = `
ALTER TABLE trajectory_tokens ADD COLUMN routing BLOB;
`

// schemaV9 records which episode a near-miss continuation continues
// (algorithm.near_miss): the id of the episode whose first turns it
// replayed, empty for an episode sampled from its prompt (older rows too).
const schemaV9 = `
ALTER TABLE trajectories ADD COLUMN continued_from TEXT NOT NULL DEFAULT '';
`
