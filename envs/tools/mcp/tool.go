package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/envs"
)

// tool is one tool of an MCP server, as an envs.Tool.
type tool struct {
	client      *Client
	remote      string // the name the server knows it by
	name        string // the name the agent calls (prefix + remote)
	description string
	params      json.RawMessage
}

func (t *tool) Name() string                { return t.name }
func (t *tool) Description() string         { return t.description }
func (t *tool) Parameters() json.RawMessage { return t.params }

// Call runs tools/call. A result with isError is an error with the
// result's text (the model sees it, as it would a built-in tool's error);
// a server that died, could not be reached or started is marked with
// envs.Failure; a JSON-RPC error (such as invalid params) is a plain
// error. A call that runs out of time says what malformed message the
// server sent meanwhile, if any.
func (t *tool) Call(ctx context.Context, args json.RawMessage) (envs.Result, error) {
	res, err := t.client.callTool(ctx, t.remote, args)
	switch {
	case err == nil:
	case ctx.Err() != nil && err != ctx.Err() && errors.Is(err, ctx.Err()):
		return envs.Result{}, fmt.Errorf("%s: %w", t.name, err) // with the server's first malformed message
	case ctx.Err() != nil:
		return envs.Result{}, ctx.Err()
	case errors.As(err, new(*rpcError)):
		return envs.Result{}, fmt.Errorf("%s: %w", t.name, err)
	default:
		return envs.Result{}, envs.Failure(fmt.Errorf("%s: %w", t.name, err))
	}
	text := res.text()
	if res.IsError {
		if text == "" {
			text = "the tool reported an error"
		}
		return envs.Result{}, fmt.Errorf("%s", text)
	}
	return envs.Result{Content: text, OK: true}, nil
}
