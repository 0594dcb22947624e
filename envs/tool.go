// Package envs holds the agent's side of the world: tools, the ToolEnv state
// machine that wraps them for one episode, tasks and rewards. It knows
// nothing of torch.
package envs

import (
	"context"
	"encoding/json"
	"fmt"
)

// Result is what a tool returns for one call: the text shown to the model
// and whether the call succeeded.
type Result struct {
	Content string
	OK      bool
	Refs    []string // titles of the passages the call returned, for process rewards
}

// WorldTool is a tool that reads the corpus of one world (fresh synthetic
// worlds share their names, not their passages): the passages it returns
// count as a task's evidence only when the task's Meta names the same
// world (WorldKey).
type WorldTool interface {
	Tool
	World() string
}

// Tool executes one kind of action (search, lookup, calculator, ...). Its
// parameters are a JSON schema object; arguments are validated against it
// before Call is invoked.
type Tool interface {
	Name() string
	Description() string
	Parameters() json.RawMessage
	Call(ctx context.Context, args json.RawMessage) (Result, error)
}

// CheckTool checks that t is non-nil, named, and has a parameters schema
// the validator supports: what every tool a ToolEnv or a registry takes
// must be.
func CheckTool(t Tool) error {
	if t == nil {
		return fmt.Errorf("nil tool")
	}
	if t.Name() == "" {
		return fmt.Errorf("tool has an empty name")
	}
	if _, err := compileParameters(t.Parameters()); err != nil {
		return fmt.Errorf("tool %s: parameters %w", t.Name(), err)
	}
	return nil
}
