// Package rollout produces multi-turn agent trajectories with continuous
// batching (decoding.Loop, run with this package's policy): a fixed number
// of KV-cache slots decode together, one decode call per step for all
// active slots; a slot whose turn ends leaves the batch while its
// environment step (the tool call) runs on its own goroutine, and
// re-enters once the observation is prefilled; a finished
// trajectory frees its slot for the next waiting prompt. Remote runs the
// same episodes with their turns sampled by an external engine (a vLLM
// server, VLLM), one goroutine per episode; both keep trajectories with
// the same code (episode.go). Tokens are kept as sampled (token-in,
// token-out): model output is never decoded and re-encoded.
package rollout

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/toolcall"
)

// Chat renders prompts and observations to tokens and says where turns end.
// Text from outside (user, tools, responses) must come out as plain text:
// only the format's own markup and the system text may be control tokens.
type Chat interface {
	Prompt(system, user string, tools []json.RawMessage) ([]int32, error)
	// Observation is what the environment appends after a turn that called
	// tools (mask 0): names[j] is the function whose call the j-th response
	// answers ("" when it answers none, as a parse error's does), which
	// Gemma 4's template writes with the response; closed says the model
	// ended its turn itself.
	Observation(names, responses []string, closed bool) []int32
	// EndsTurn reports whether a sampled token ends the assistant's turn,
	// and whether it also closes it (<|im_end|>, eos) or leaves the closing
	// to the environment (</tool_call>).
	EndsTurn(id int32) (ends, closes bool)
	Decode(ids []int32) string
}

// Env is the environment of one episode as the scheduler drives it;
// *envs.ToolEnv implements it.
type Env interface {
	Step(ctx context.Context, a envs.Action) (envs.StepResult, error)
	Outcome() (float64, map[string]float64)
}

// Setup is how one task starts: the prompt's system and user text, the
// tool schemas shown in it, and the episode that answers the model.
type Setup struct {
	System string
	User   string
	Tools  []json.RawMessage
	Env    Env
}

// Factory starts an episode for a task. The agent, the naive-RAG baseline
// and the benchmarks differ only in their factory.
type Factory func(task envs.Task) (Setup, error)

// ChatFormat adapts the tokenizer's ChatML renderer to Chat.
type ChatFormat struct {
	F           *tokenizer.ChatFormat
	toolCallEnd int32
	hasToolEnd  bool
	stops       map[int32]bool
	ctx         Context
}

// NewChat wraps a tokenizer's chat format, appending each turn's context
// (see WithContext).
func NewChat(f *tokenizer.ChatFormat) *ChatFormat {
	c := &ChatFormat{F: f, stops: map[int32]bool{}, ctx: Context{Mode: ContextAppend}}
	for _, id := range f.StopIDs() {
		c.stops[id] = true
	}
	c.toolCallEnd, c.hasToolEnd = f.Special(toolcall.ToolCallClose)
	return c
}

// Prompt renders the start of an episode.
func (c *ChatFormat) Prompt(system, user string, tools []json.RawMessage) ([]int32, error) {
	return c.F.Prompt(system, user, tools)
}

// Observation renders the environment's answer, each response after the
// call it answers (tokenizer.ChatFormat.Observation): the calls are the
// names up to the first "", so that a response that answers no call is
// named as the template names one beyond the calls.
func (c *ChatFormat) Observation(names, responses []string, closed bool) []int32 {
	var calls []tokenizer.ToolCall
	for _, n := range names {
		if n == "" {
			break
		}
		calls = append(calls, tokenizer.ToolCall{Name: n})
	}
	return c.F.Observation(calls, responses, closed)
}

// callNames are the names of a step's calls, one per response: "" for a
// turn whose calls did not parse (its one response is the error).
func callNames(res envs.StepResult) []string {
	names := make([]string, len(res.Calls))
	for i, c := range res.Calls {
		if c.ParseError == "" {
			names[i] = c.Name
		}
	}
	return names
}

// EndsTurn: every stop id ends the turn; all but </tool_call> close it.
func (c *ChatFormat) EndsTurn(id int32) (bool, bool) {
	if !c.stops[id] {
		return false, false
	}
	return true, !(c.hasToolEnd && id == c.toolCallEnd)
}

// Decode renders tokens as text, special tokens kept.
func (c *ChatFormat) Decode(ids []int32) string { return c.F.Tokenizer().Decode(ids, false) }

// StopIDs lists the ids that end a turn (EndsTurn's), in ascending order.
func (c *ChatFormat) StopIDs() []int32 {
	ids := make([]int32, 0, len(c.stops))
	for id := range c.stops {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}
