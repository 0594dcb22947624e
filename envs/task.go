package envs

// Task is one question the agent must answer, from a dataset or the
// synthetic world.
type Task struct {
	ID       string            // unique within its dataset
	Dataset  string            // e.g. "hotpotqa", "2wikimultihopqa", "musique", "nq", "synthetic"
	Question string            // the user message
	Answers  []string          // the gold answer first, then aliases
	Support  []string          // titles of the supporting passages, when known
	Hops     int               // number of reasoning hops, 0 when unknown
	Meta     map[string]string // anything else a loader keeps (level, type, split)
}

// WorldKey is the Meta key naming the world a task belongs to (a fresh
// synthetic world): its supporting passages are that world's, so a
// passage of the same title from a WorldTool of another world is not its
// evidence.
const WorldKey = "world"
