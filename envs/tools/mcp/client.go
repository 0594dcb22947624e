package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrl/agentrl/envs"
)

// ProtocolVersion is the MCP revision the client asks for. A server that
// answers initialize with another revision it supports (e.g. 2025-03-26)
// is accepted: the client uses nothing the two differ on.
const ProtocolVersion = "2025-06-18"

// clientInfo names the client in initialize.
var clientInfo = map[string]string{"name": "agentrl", "version": "1"}

// Client is a connection to one MCP server, shared by every caller. It
// opens a session (a started process, or an HTTP session) on first use
// and whenever the previous one broke: a call in flight when the server
// dies fails, and the next call starts the server again.
type Client struct {
	name         string
	dial         func() (transport, error)
	startTimeout time.Duration // bounds opening a session, whatever the caller's deadline
	ids          atomic.Int64

	mu       sync.Mutex
	sess     *session
	gen      int       // sessions opened so far
	failedAt time.Time // when opening a session last failed
	failErr  error     // and why
}

// retryAfter is how long after a failed start of a server calls fail
// with that start's error instead of starting it again, so that a server
// that cannot start is not started once per call.
const retryAfter = time.Second

// session is an initialized transport.
type session struct{ t transport }

// newClient returns a client that opens sessions with dial, each within
// startTimeout.
func newClient(name string, dial func() (transport, error), startTimeout time.Duration) *Client {
	return &Client{name: name, dial: dial, startTimeout: startTimeout}
}

// current returns the live session, opening one (with the initialize
// handshake) when there is none. Concurrent callers share one opening,
// which is bounded by startTimeout rather than by the caller's context: a
// server slower to start than one tool call is allowed to finish starting
// for the next.
func (c *Client) current(ctx context.Context) (*session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess != nil {
		return c.sess, nil
	}
	if c.failErr != nil && time.Since(c.failedAt) < retryAfter {
		return nil, c.failErr
	}
	s, err := c.open(ctx)
	if err != nil {
		c.failedAt, c.failErr = time.Now(), err
		return nil, err
	}
	c.sess, c.failErr = s, nil
	c.gen++
	return s, nil
}

// open starts a session and runs the handshake within startTimeout.
func (c *Client) open(ctx context.Context) (*session, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.startTimeout)
	defer cancel()
	t, err := c.dial()
	if err != nil {
		return nil, fmt.Errorf("MCP server %s: %w", c.name, err)
	}
	s := &session{t: t}
	if err := c.initialize(ctx, s); err != nil {
		t.close()
		// %v, not %w: a JSON-RPC error here is the server's failure, not
		// an error of the call that needed the session.
		return nil, fmt.Errorf("MCP server %s: initialize: %v", c.name, err)
	}
	return s, nil
}

// initialize runs the handshake: initialize, then notifications/initialized.
func (c *Client) initialize(ctx context.Context, s *session) error {
	params := map[string]any{"protocolVersion": ProtocolVersion, "capabilities": map[string]any{}, "clientInfo": clientInfo}
	raw, err := s.t.call(ctx, c.ids.Add(1), "initialize", params)
	if err != nil {
		return err
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.ProtocolVersion == "" {
		return fmt.Errorf("initialize result without a protocolVersion: %s", envs.Excerpt(string(raw), 200))
	}
	s.t.setProtocolVersion(res.ProtocolVersion)
	return s.t.notify(ctx, "notifications/initialized", nil)
}

// drop forgets s if it is still the current session, and closes it.
func (c *Client) drop(s *session) {
	c.mu.Lock()
	if c.sess == s {
		c.sess = nil
	}
	c.mu.Unlock()
	go s.t.close()
}

// request sends one request on the current session. When the session is
// broken it is dropped (the next request opens a new one) and the error
// is marked as the server's failure (envs.Failure by the tool).
func (c *Client) request(ctx context.Context, method string, params any) (json.RawMessage, error) {
	s, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	raw, err := s.t.call(ctx, c.ids.Add(1), method, params)
	if errors.Is(err, errBroken) {
		c.drop(s)
		return nil, fmt.Errorf("MCP server %s: %w", c.name, err)
	}
	return raw, err
}

// Sessions is the number of sessions opened so far: 1 plus the restarts.
func (c *Client) Sessions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// Close ends the current session, stopping a server process.
func (c *Client) Close() error {
	c.mu.Lock()
	s := c.sess
	c.sess = nil
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	return s.t.close()
}

// toolInfo is one entry of tools/list.
type toolInfo struct {
	Name        string          `json:"name"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// listTools pages through tools/list.
func (c *Client) listTools(ctx context.Context) ([]toolInfo, error) {
	var all []toolInfo
	cursor := ""
	for page := 0; ; page++ {
		if page == 1000 {
			return nil, fmt.Errorf("MCP server %s: tools/list still paging after 1000 pages", c.name)
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, err := c.request(ctx, "tools/list", params)
		if err != nil {
			return nil, fmt.Errorf("MCP server %s: tools/list: %w", c.name, err)
		}
		var res struct {
			Tools      []toolInfo `json:"tools"`
			NextCursor string     `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, fmt.Errorf("MCP server %s: tools/list result: %w", c.name, err)
		}
		all = append(all, res.Tools...)
		if res.NextCursor == "" {
			return all, nil
		}
		cursor = res.NextCursor
	}
}

// callResult is the result of tools/call.
type callResult struct {
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		MimeType string `json:"mimeType"`
		Resource *struct {
			URI  string `json:"uri"`
			Text string `json:"text"`
		} `json:"resource"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// text joins the content items: text as it is, an embedded text resource
// by its text, anything else (images, audio, binary resources) as a
// placeholder naming its type. With no content, the structured content.
func (r *callResult) text() string {
	var parts []string
	for _, it := range r.Content {
		switch {
		case it.Type == "text":
			parts = append(parts, it.Text)
		case it.Type == "resource" && it.Resource != nil && it.Resource.Text != "":
			parts = append(parts, it.Resource.Text)
		default:
			parts = append(parts, fmt.Sprintf("[%s %s]", it.Type, it.MimeType))
		}
	}
	if len(parts) == 0 && len(r.StructuredContent) > 0 {
		return string(r.StructuredContent)
	}
	return strings.Join(parts, "\n")
}

// callTool runs tools/call.
func (c *Client) callTool(ctx context.Context, name string, args json.RawMessage) (*callResult, error) {
	raw, err := c.request(ctx, "tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return nil, err
	}
	var res callResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("MCP server %s: tools/call result: %w", c.name, err)
	}
	return &res, nil
}

// cancelRequest tells the server that the client gave up on request id,
// best effort, so that it can stop working on it.
func cancelRequest(t transport, id int64, reason error) {
	ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
	defer cancel()
	_ = t.notify(ctx, "notifications/cancelled", map[string]any{"requestId": id, "reason": reason.Error()})
}
