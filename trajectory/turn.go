package trajectory

// Turn is one assistant turn and the environment's answer to it. Its JSON
// form is the one an external scorer reads ("text", "calls", ...).
type Turn struct {
	Text          string     `json:"text"`           // the assistant's text, decoded from the sampled tokens (display only)
	GenTokens     int        `json:"gen_tokens"`     // tokens the policy generated in this turn
	Calls         []ToolCall `json:"calls"`          // the turn's tool calls in order, nil when it made none
	ProcessReward float64    `json:"process_reward"` // reward for this turn, enters at its last action token
	Evidence      int        `json:"evidence"`       // supporting passages of the task first retrieved in this turn (each credited once, here)
	LatencyMS     float64    `json:"latency_ms"`     // wall time of the environment's step (its calls run concurrently)
	PolicyVersion int        `json:"policy_version"` // updates the policy that sampled this turn had seen
}

// ToolsOK reports whether the turn made tool calls and every one of them
// was valid and succeeded.
func (t Turn) ToolsOK() bool {
	for _, c := range t.Calls {
		if !c.OK {
			return false
		}
	}
	return len(t.Calls) > 0
}

// ToolCall is one tool call of a turn and what came of it. A turn whose
// calls could not be parsed has a single ToolCall with no Name and a
// ParseError.
//
// Result is the tool's output, or the error text the model was shown; ""
// when the call was not run. The environment's step records the output
// whole; a trajectory keeps the response the model was shown for the call
// (cut to env.max_observation_chars), "" when the episode ended before it
// was shown.
type ToolCall struct {
	Name       string   `json:"tool"`                  // the tool called, "" when the turn's calls did not parse
	Args       string   `json:"args"`                  // the arguments as compact JSON
	ParseError string   `json:"parse_error,omitempty"` // why the turn's calls could not be parsed
	Result     string   `json:"result"`                // the output or error text (see above)
	OK         bool     `json:"ok"`                    // the call was valid and the tool succeeded
	LatencyMS  float64  `json:"latency_ms"`            // wall time of the call, 0 when it was not run
	Refs       []string `json:"refs,omitempty"`        // titles of the passages the tool returned
}
