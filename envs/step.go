package envs

import "github.com/agentrl/agentrl/trajectory"

// Action is one assistant turn handed to the environment.
type Action struct {
	Text          string // the generated text of the turn
	Tokens        int    // tokens generated in this turn
	TotalTokens   int    // tokens of the whole trajectory so far, prompt included
	TurnTruncated bool   // the turn hit the per-turn token limit
}

// StepResult is the environment's answer to an Action.
type StepResult struct {
	Responses     []string              // one observation per call, to wrap in <tool_response>
	Calls         []trajectory.ToolCall // the calls of the turn, in order, each with its whole Result
	ProcessReward float64               // this turn's process reward
	Evidence      int                   // supporting passages (Task.Support) this turn retrieved first in the episode
	Done          bool                  // the episode has ended
	Stop          trajectory.StopReason // why it ended, "" while it goes on
	Answer        string                // the final answer when Stop is StopAnswer
}
