package envs

import (
	"time"

	"github.com/agentrl/agentrl/trajectory"
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
	Responses     []string              // one observation per call, to wrap in <tool_response>
	Calls         []Call                // the calls of the turn, in order
	ProcessReward float64               // this turn's process reward
	Done          bool                  // the episode has ended
	Stop          trajectory.StopReason // why it ended, "" while it goes on
	Answer        string                // the final answer when Stop is StopAnswer
}

// Turn is one entry of an episode's history.
type Turn struct {
	Action Action
	Result StepResult
}
