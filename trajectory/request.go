package trajectory

// Request is one request an agent program made to the gateway during its
// episode, and how the token ledger took it.
type Request struct {
	Index            int     `json:"index"`             // order within the episode
	PromptTokens     int     `json:"prompt_tokens"`     // the rendered prompt
	CompletionTokens int     `json:"completion_tokens"` // tokens sampled
	Link             string  `json:"link"`              // start, extend, split; "" when it got no completion
	Segment          int     `json:"segment"`           // the ledger segment (trajectory) the completion went to, -1 when none
	Finish           string  `json:"finish"`            // the finish_reason given
	Status           int     `json:"status"`            // the HTTP status the program got
	LatencyMS        float64 `json:"latency_ms"`        // time from the request to its answer
}
