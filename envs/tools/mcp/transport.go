package mcp

import (
	"context"
	"encoding/json"
	"errors"
)

// transport carries JSON-RPC messages to one server session. Its methods
// are safe for concurrent use: many calls may be in flight at once.
type transport interface {
	// call sends a request and waits for its response; it returns the
	// result, a *rpcError when the server answered with an error, an
	// error wrapping errBroken when the session can no longer be used, or
	// ctx's error.
	call(ctx context.Context, id int64, method string, params any) (json.RawMessage, error)
	// notify sends a notification.
	notify(ctx context.Context, method string, params any) error
	// setProtocolVersion records the version initialize agreed on.
	setProtocolVersion(v string)
	// close ends the session (and stops a server it started).
	close() error
}

// errBroken marks a session that can no longer be used: the server
// process exited, the connection failed or the server forgot the session.
// The client starts a new session for the next call.
var errBroken = errors.New("MCP session broken")
