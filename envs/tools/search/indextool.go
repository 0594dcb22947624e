package search

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentrl/agentrl/envs"
)

// indexTool is a tool over an Index that takes one required string
// argument (search's query, lookup's title): the skeleton both share.
type indexTool struct {
	name, description string
	param, paramDoc   string // the argument's name and its doc in the schema
	run               func(ctx context.Context, arg string) (envs.Result, error)
}

// Name returns the registered name.
func (t *indexTool) Name() string { return t.name }

// Description tells the model what the tool does.
func (t *indexTool) Description() string { return t.description }

// Parameters is the JSON schema of the arguments.
func (t *indexTool) Parameters() json.RawMessage { return oneStringParam(t.param, t.paramDoc) }

// Call reads the one argument and runs the call (see NewSearchTool and
// NewLookupTool for the results and errors).
func (t *indexTool) Call(ctx context.Context, args json.RawMessage) (envs.Result, error) {
	arg, err := stringArg(t.name, args, t.param)
	if err != nil {
		return envs.Result{}, err
	}
	return t.run(ctx, arg)
}

// oneStringParam is the JSON schema of a tool taking one required string,
// with its keys in the conventional order (type, properties, required):
// the schema is part of the prompt, so its text is kept stable.
func oneStringParam(name, description string) json.RawMessage {
	n, _ := json.Marshal(name)
	d, _ := json.Marshal(description)
	return json.RawMessage(`{"type":"object","properties":{` + string(n) + `:{"type":"string","description":` + string(d) +
		`}},"required":[` + string(n) + `],"additionalProperties":false}`)
}

// stringArg reads a call's one required string argument.
func stringArg(tool string, args json.RawMessage, name string) (string, error) {
	var a map[string]json.RawMessage
	if err := decodeArgs(tool, args, &a); err != nil {
		return "", err
	}
	raw, ok := a[name]
	if !ok || string(raw) == "null" {
		return "", fmt.Errorf("%s: missing required argument %q", tool, name)
	}
	var v string
	if err := decodeArgs(tool, raw, &v); err != nil {
		return "", err
	}
	return v, nil
}

// decodeArgs unmarshals the arguments of a call to tool.
func decodeArgs(tool string, args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("%s: arguments must be a JSON object: %w", tool, err)
	}
	return nil
}
