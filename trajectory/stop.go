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
