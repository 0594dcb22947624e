package envs

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrl/agentrl/toolcall"
	"github.com/agentrl/agentrl/trajectory"
)

// ToolEnv is the state machine of one episode: it takes the model's turns
// (Step), runs the tool calls they contain, answers with observations and
// per-turn process rewards, decides when the episode ends, and scores it
// (Outcome). Its methods are safe for concurrent use; Step runs one at a
// time.
type ToolEnv struct {
	task    Task
	cfg     EnvConfig
	tools   map[string]boundTool
	schemas toolcall.ParamSchemas // the tools' parameter schemas, which type the XML syntax's values
	names   string                // the tools' names, for error messages

	mu     sync.Mutex
	state  State
	stop   trajectory.StopReason
	answer string
	turns  []trajectory.Turn
	memo   episodeMemo // touched only by the Step that holds StateExecutingTools
}

// boundTool is a tool with its compiled parameters schema.
type boundTool struct {
	tool   Tool
	schema *Schema
}

// NewToolEnv starts an episode of task with the given tools. It fails on an
// invalid configuration, a nil or unnamed tool, two tools with one name, or
// a parameters schema the validator does not support.
func NewToolEnv(task Task, tools []Tool, cfg EnvConfig) (*ToolEnv, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("task %s: %w", task.ID, err)
	}
	e := &ToolEnv{task: task, cfg: cfg, tools: make(map[string]boundTool, len(tools)), memo: newEpisodeMemo()}
	names := make([]string, 0, len(tools))
	for i, t := range tools {
		if err := CheckTool(t); err != nil {
			return nil, fmt.Errorf("task %s: tool %d: %w", task.ID, i, err)
		}
		if _, dup := e.tools[t.Name()]; dup {
			return nil, fmt.Errorf("task %s: two tools are called %q", task.ID, t.Name())
		}
		schema, _ := compileParameters(t.Parameters()) // checked by CheckTool
		e.tools[t.Name()] = boundTool{tool: t, schema: schema}
		names = append(names, t.Name())
	}
	e.schemas = ParamSchemasOf(tools)
	slices.Sort(names)
	e.names = strings.Join(names, ", ")
	if e.names == "" {
		e.names = "none"
	}
	return e, nil
}

// State returns where the episode is.
func (e *ToolEnv) State() State {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state
}

// History returns the turns so far, oldest first.
func (e *ToolEnv) History() []trajectory.Turn {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.turns)
}

// Step takes the model's next turn. A turn that holds tool calls gets one
// response per call, in call order (calls run concurrently, each within
// ToolTimeout); a malformed call, an unknown tool, arguments failing the
// tool's schema, a tool error, panic or timeout all become "Error: ..."
// responses and the episode goes on. The episode ends when:
//
//   - the turn gives an <answer> and calls no tool: "answer";
//   - the turn calls a tool but is the MaxTurns-th turn: "max_turns" (the
//     tools are not run, their responses would never be read);
//   - TotalTokens reached MaxTokens, or the turn was cut off by the
//     per-turn limit without a complete tool call or answer: "max_tokens"
//     (an engine whose budget is spent by an observation ends the episode
//     with an empty Action carrying TotalTokens);
//   - the turn neither calls a tool nor answers: "no_tool_call".
//
// Step returns an error, and changes nothing, in StateDone or while another
// Step runs. When ctx is cancelled while tools run it returns ctx's error
// and the episode ends with trajectory.StopCancelled.
func (e *ToolEnv) Step(ctx context.Context, a Action) (StepResult, error) {
	e.mu.Lock()
	switch e.state {
	case StateDone:
		e.mu.Unlock()
		return StepResult{}, fmt.Errorf("task %s: step after the episode ended (%s)", e.task.ID, e.stop)
	case StateExecutingTools:
		e.mu.Unlock()
		return StepResult{}, fmt.Errorf("task %s: step while another step is running", e.task.ID)
	}
	e.state = StateExecutingTools
	turn := len(e.turns) + 1
	e.mu.Unlock()

	start := time.Now()
	res, err := e.act(ctx, turn, a)
	latency := time.Since(start)

	e.mu.Lock()
	defer e.mu.Unlock()
	e.turns = append(e.turns, trajectory.Turn{Text: a.Text, GenTokens: a.Tokens, Calls: res.Calls,
		ProcessReward: res.ProcessReward, Evidence: res.Evidence, LatencyMS: milliseconds(latency)})
	e.state = StateAwaitingAction
	if res.Done {
		e.state, e.stop, e.answer = StateDone, res.Stop, res.Answer
	}
	return res, err
}

// act decides what the turn is and carries it out.
func (e *ToolEnv) act(ctx context.Context, turn int, a Action) (StepResult, error) {
	calls, perr := toolcall.Parse(e.cfg.Calls, a.Text, e.schemas)
	budgetSpent := a.TotalTokens >= e.cfg.MaxTokens
	if perr == nil && len(calls) == 0 { // no tool call at all
		if answer, ok := toolcall.ParseAnswer(a.Text); ok {
			return StepResult{Done: true, Stop: trajectory.StopAnswer, Answer: answer}, nil
		}
		if a.TurnTruncated || budgetSpent {
			return StepResult{Done: true, Stop: trajectory.StopMaxTokens}, nil
		}
		return StepResult{Done: true, Stop: trajectory.StopNoToolCall}, nil
	}
	switch {
	case perr != nil && (a.TurnTruncated || budgetSpent): // cut off in the middle of a call
		return StepResult{Calls: parseFailure(perr), Done: true, Stop: trajectory.StopMaxTokens}, nil
	case turn >= e.cfg.MaxTurns:
		return StepResult{Calls: unrun(calls, perr), Done: true, Stop: trajectory.StopMaxTurns}, nil
	case budgetSpent:
		return StepResult{Calls: unrun(calls, perr), Done: true, Stop: trajectory.StopMaxTokens}, nil
	case perr != nil:
		obs := errorObservation(perr)
		res := StepResult{Calls: parseFailure(perr), Responses: []string{capObservation(obs, e.cfg.MaxObservationChars)}}
		e.credit(&res, nil)
		return res, nil
	}
	return e.execute(ctx, calls)
}

// parseFailure records a turn whose calls did not parse.
func parseFailure(perr error) []trajectory.ToolCall {
	return []trajectory.ToolCall{{ParseError: perr.Error(), Result: errorObservation(perr)}}
}

// unrun records calls that were not run because the episode ended.
func unrun(calls []toolcall.Call, perr error) []trajectory.ToolCall {
	if perr != nil {
		return parseFailure(perr)
	}
	out := make([]trajectory.ToolCall, len(calls))
	for i, c := range calls {
		out[i] = trajectory.ToolCall{Name: c.Name, Args: string(c.Arguments)}
	}
	return out
}

// execute validates and runs the calls concurrently, keeping call order.
func (e *ToolEnv) execute(ctx context.Context, calls []toolcall.Call) (StepResult, error) {
	outs := make([]callOutcome, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		bt, ok := e.tools[c.Name]
		if !ok {
			outs[i] = callOutcome{status: callRejected, err: fmt.Errorf("unknown tool %q (available: %s)", c.Name, e.names)}
			continue
		}
		if err := bt.schema.Validate(c.Arguments); err != nil {
			outs[i] = callOutcome{status: callRejected, err: fmt.Errorf("invalid arguments for %s: %w", c.Name, err)}
			continue
		}
		wg.Go(func() {
			outs[i] = runTool(ctx, bt.tool, c.Arguments, e.cfg.ToolTimeout)
			outs[i].foreign = e.foreign(bt.tool)
		})
	}
	wg.Wait()

	res := StepResult{Calls: make([]trajectory.ToolCall, len(calls)), Responses: make([]string, len(calls))}
	for i, c := range calls {
		o := outs[i]
		call := trajectory.ToolCall{Name: c.Name, Args: string(c.Arguments), LatencyMS: milliseconds(o.latency)}
		obs := ""
		if o.err != nil {
			obs = errorObservation(o.err)
			call.Result = obs
		} else {
			obs, call.Result, call.OK, call.Refs = o.result.Content, o.result.Content, o.result.OK, o.result.Refs
			if obs == "" {
				obs = "(no output)"
			}
		}
		res.Calls[i] = call
		res.Responses[i] = capObservation(obs, e.cfg.MaxObservationChars)
	}
	if err := ctx.Err(); err != nil {
		return StepResult{Calls: res.Calls, Done: true, Stop: trajectory.StopCancelled}, fmt.Errorf("task %s: step cancelled: %w", e.task.ID, err)
	}
	e.credit(&res, outs)
	return res, nil
}

// foreign reports whether t reads another world's corpus than the task's.
func (e *ToolEnv) foreign(t Tool) bool {
	wt, ok := t.(WorldTool)
	return ok && wt.World() != e.task.Meta[WorldKey]
}

// credit sets the turn's process reward and the evidence it retrieved
// from what its calls did (outs is nil when they did not parse).
func (e *ToolEnv) credit(res *StepResult, outs []callOutcome) {
	f := e.memo.facts(res.Calls, outs, e.task.Support)
	res.ProcessReward, res.Evidence = e.cfg.Rewards.Process(f), f.NewSupport
}

// milliseconds converts a duration to the milliseconds a trajectory records.
func milliseconds(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ParamSchemasOf are the parameter schemas of tools.
func ParamSchemasOf(tools []Tool) toolcall.ParamSchemas {
	s := make(toolcall.ParamSchemas, len(tools))
	for _, t := range tools {
		s[t.Name()] = t.Parameters()
	}
	return s
}
