package envs

import "time"

// Why an episode ended; the values are those of trainer/traj.StopReason.
const (
	StopAnswer     = "answer"       // the model gave a final answer
	StopNoToolCall = "no_tool_call" // a turn ended without a tool call or an answer
	StopMaxTurns   = "max_turns"    // the turn limit was reached
	StopMaxTokens  = "max_tokens"   // the token budget was reached or the turn was cut off
	StopCancelled  = "cancelled"    // the context was cancelled during a step
)

// Action is one assistant turn handed to the environment.
type Action struct {
	Text          string // the generated text of the turn
	Tokens        int    // tokens generated in this turn
	TotalTokens   int    // tokens of the whole trajectory so far, prompt included
	TurnTruncated bool   // the turn hit the per-turn token limit
}

// Call is the record of one tool call of a turn.
type Call struct {
	Name       string        // the tool called, "" when the turn did not parse
	Args       string        // the arguments as compact JSON
	ParseError string        // why the turn's calls could not be parsed
	Result     string        // the tool's full output, or the error text; "" when not run
	OK         bool          // the call was valid and the tool succeeded
	Refs       []string      // the passage titles the tool returned
	Latency    time.Duration // wall time of the call
}

// StepResult is the environment's answer to an Action.
type StepResult struct {
	Responses     []string // one observation per call, to wrap in <tool_response>
	Calls         []Call   // the calls of the turn, in order
	ProcessReward float64  // this turn's process reward
	Done          bool     // the episode has ended
	Stop          string   // why it ended (Stop* constants), "" while it goes on
	Answer        string   // the final answer when Stop is StopAnswer
}

// Turn is one entry of an episode's history.
type Turn struct {
	Action Action
	Result StepResult
}
