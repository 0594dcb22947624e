package envs

// State is where a ToolEnv is in its episode.
//
//	AwaitingAction --Step--> ExecutingTools --(episode goes on)--> AwaitingAction
//	                                        --(episode ends)-----> Done
//
// Step is refused in ExecutingTools (one step at a time) and in Done.
type State int

// The states of a ToolEnv.
const (
	StateAwaitingAction State = iota // waiting for the model's next turn (the initial state)
	StateExecutingTools              // a Step is parsing the turn and running its tools
	StateDone                        // the episode has ended; Outcome can be read
)

// String names the state, e.g. "awaiting_action".
func (s State) String() string {
	switch s {
	case StateAwaitingAction:
		return "awaiting_action"
	case StateExecutingTools:
		return "executing_tools"
	case StateDone:
		return "done"
	}
	return "unknown"
}
