// Package trajectory holds the data of one multi-turn agent episode: the
// tokens with their behaviour log-probabilities and action mask, the turns
// with their tool calls, the rewards and why the episode stopped. The
// environment records turns and stop reasons, the rollout scheduler fills
// the tokens, the algorithms add advantages, the store persists it. It is a
// leaf: it imports nothing of the project, so every layer can share it.
package trajectory

// Split says whether a trajectory was sampled for training or evaluation.
type Split string

// The two splits.
const (
	Train Split = "train"
	Eval  Split = "eval"
)

// StopReason says why an episode ended.
type StopReason string

// The reasons an episode ends.
const (
	StopAnswer     StopReason = "answer"       // the model gave a final answer
	StopNoToolCall StopReason = "no_tool_call" // a turn ended without a tool call or an answer
	StopMaxTurns   StopReason = "max_turns"    // the turn limit was reached (truncated)
	StopMaxTokens  StopReason = "max_tokens"   // the total token budget was reached (truncated)
	StopError      StopReason = "error"        // a tool, env or tokenizer failure ended it
	StopCancelled  StopReason = "cancelled"    // the context was cancelled
)

// Truncated reports whether the episode was cut off by a limit rather than
// ending on its own.
func (s StopReason) Truncated() bool { return s == StopMaxTurns || s == StopMaxTokens }

// Turn is one assistant turn and the environment's answer to it.
type Turn struct {
	Text          string  // the assistant's text, decoded from the sampled tokens (display only)
	GenTokens     int     // number of tokens the policy generated in this turn
	ToolName      string  // the tool called, "" when none
	ToolArgs      string  // the call's arguments as JSON, "" when none
	ParseError    string  // why the tool call could not be parsed, "" when it could
	Observation   string  // the text appended for the next turn (tool result or error)
	ToolOK        bool    // the tool call was valid and the tool succeeded
	ProcessReward float64 // reward for this turn, enters at its last action token
	LatencyMS     float64 // wall time of the tool call(s)
}

// Trajectory is one episode: a prompt, the policy's turns and the
// environment's observations, as one token sequence with per-token arrays of
// equal length.
type Trajectory struct {
	ID            string // unique within a run: "<iteration>-<split>-<group>-<sample>"
	TaskID        string
	Dataset       string
	Hops          int
	Group         int // index of the prompt within the iteration's batch
	Sample        int // index of the sample within its group
	Split         Split
	Iteration     int
	PolicyVersion int // number of updates the sampling policy had seen
	Question      string
	Gold          []string // gold answer and aliases
	Answer        string   // the final answer extracted from the last turn, "" when none
	Outcome       float64  // outcome reward (scorer + format), enters at the last action token
	Reward        float64  // Outcome plus the sum of process rewards
	Components    map[string]float64
	Stop          StopReason
	Error         string // what ended the episode when Stop == StopError
	DurationMS    float64

	PromptLen  int       // tokens of the initial prompt (all mask 0)
	Tokens     []int32   // the whole token history
	Logprobs   []float32 // behaviour log-probability of each sampled token, 0 elsewhere
	Mask       []uint8   // action mask: 1 where the policy sampled the token
	TurnOf     []int16   // index of the turn a token belongs to, -1 for the prompt
	Values     []float32 // critic values (PPO), nil otherwise
	Advantages []float32 // per-token advantages, filled by the algorithm
	Returns    []float32 // per-token returns (value targets), filled by the algorithm

	Turns []Turn
}

// ActionTokens counts the tokens the policy generated.
func (t *Trajectory) ActionTokens() int {
	n := 0
	for _, m := range t.Mask {
		n += int(m)
	}
	return n
}
