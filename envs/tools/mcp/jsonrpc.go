package mcp

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/agentrl/agentrl/envs"
)

// message is one JSON-RPC 2.0 message in either direction: a request (ID
// and Method), a notification (Method only) or a response (ID with
// Result or Error).
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcError is the error object of a JSON-RPC response.
type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error is the server's message, Printable.
func (e *rpcError) Error() string {
	if len(e.Data) > 0 && string(e.Data) != "null" {
		return envs.Printable(fmt.Sprintf("%s (code %d, data %s)", e.Message, e.Code, e.Data))
	}
	return envs.Printable(fmt.Sprintf("%s (code %d)", e.Message, e.Code))
}

// codeMethodNotFound answers a server's request the client does not serve.
const codeMethodNotFound = -32601

// isResponse reports whether m answers a request.
func (m *message) isResponse() bool { return m.Method == "" && len(m.ID) > 0 }

// intID reads a response's id; the client only sends integer ids.
func (m *message) intID() (int64, bool) {
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	return id, err == nil
}

// encodeRequest renders a request (id >= 0) or a notification (id < 0).
func encodeRequest(id int64, method string, params any) ([]byte, error) {
	m := struct {
		JSONRPC string `json:"jsonrpc"`
		ID      *int64 `json:"id,omitempty"`
		Method  string `json:"method"`
		Params  any    `json:"params,omitempty"`
	}{JSONRPC: "2.0", Method: method, Params: params}
	if id >= 0 {
		m.ID = &id
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", method, err)
	}
	return b, nil
}

// encodeError renders the error response to a server's request.
func encodeError(id json.RawMessage, code int, msg string) []byte {
	b, _ := json.Marshal(message{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: msg}})
	return b
}

// encodeEmptyResult renders an empty successful response (the answer to
// a ping).
func encodeEmptyResult(id json.RawMessage) []byte {
	b, _ := json.Marshal(message{JSONRPC: "2.0", ID: id, Result: json.RawMessage(`{}`)})
	return b
}

// answerServerRequest is the client's reply to a request the server sent
// it: an empty result to a ping, "method not found" to anything else
// (the client offers no roots, sampling or elicitation).
func answerServerRequest(m *message) []byte {
	if m.Method == "ping" {
		return encodeEmptyResult(m.ID)
	}
	return encodeError(m.ID, codeMethodNotFound, "agentrl's MCP client does not serve "+m.Method)
}

// malformedNote keeps the first malformed message a server sent (one
// that does not parse, is too deeply nested, or answers no request that
// was sent), so that a call that then fails, often by its deadline, says
// what the server sent instead of its answer. Safe for concurrent use.
type malformedNote struct {
	mu    sync.Mutex
	first string
}

// note records why a message is malformed, with an excerpt, unless one
// was recorded before.
func (n *malformedNote) note(why string, msg []byte) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.first == "" {
		n.first = why + ": " + envs.Excerpt(strings.TrimSpace(string(msg)), 200)
	}
}

// wrap adds the first malformed message, if any, to err.
func (n *malformedNote) wrap(err error) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.first == "" {
		return err
	}
	return fmt.Errorf("%w (the server's first malformed message: %s)", err, n.first)
}
