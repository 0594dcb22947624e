package trajectory

// StopReason says why an episode ended.
type StopReason string

// The reasons an episode ends.
const (
	StopAnswer     StopReason = "answer"       // the model gave a final answer
	StopNoToolCall StopReason = "no_tool_call" // a turn ended without a tool call or an answer
	StopMaxTurns   StopReason = "max_turns"    // the turn limit was reached (truncated)
	StopMaxTokens  StopReason = "max_tokens"   // the token budget was reached or a turn was cut off (truncated)
	StopError      StopReason = "error"        // a tool, env or tokenizer failure ended it
	StopCancelled  StopReason = "cancelled"    // the context was cancelled
)

// Truncated reports whether the episode was cut off by a limit rather than
// ending on its own.
func (s StopReason) Truncated() bool { return s == StopMaxTurns || s == StopMaxTokens }

// The ways an agent program's episode fails (agent.command): each gets
// reward 0, and the program's stderr tail is kept in Error.
const (
	StopProgramExit    StopReason = "program_exit"    // the program exited with a non-zero status
	StopProgramTimeout StopReason = "program_timeout" // it ran past agent.timeout and was killed
	StopNoAnswer       StopReason = "no_answer"       // it printed no answer
	StopOutputFlood    StopReason = "output_flood"    // it printed more than agent.max_stdout bytes
	StopBadRequest     StopReason = "bad_request"     // the gateway refused one of its requests
)

// Failed reports whether the episode ended in a failure rather than with
// the policy's own ending: an environment error, or an agent program's
// failure. Failed episodes are stored but not trained on.
func (s StopReason) Failed() bool {
	switch s {
	case StopError, StopProgramExit, StopProgramTimeout, StopNoAnswer, StopOutputFlood, StopBadRequest:
		return true
	}
	return false
}
