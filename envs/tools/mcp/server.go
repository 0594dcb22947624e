// Package mcp exposes the tools of Model Context Protocol servers as agentrl
// tools. A server is started over stdio (a command, its arguments and
// environment) or reached over streamable HTTP (a URL); its tools are
// listed once (tools/list) and each becomes an envs.Tool whose calls go
// through tools/call. One server serves every episode of a run, with
// calls in flight concurrently. A server that dies is started again on
// the next call; the calls that were in flight fail as tool errors, and
// the episode goes on.
//
// The JSON-RPC client, both transports and the handshake are written here
// against the MCP specification (revision 2025-06-18, accepting servers
// that answer 2025-03-26).
package mcp

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentrl/agentrl/envs"
)

// Config describes one server: exactly one of Command and URL.
type Config struct {
	Name         string        // names the server in messages
	Command      string        // program to start, speaking MCP on stdin/stdout
	Args         []string      // its arguments
	Env          []string      // KEY=VALUE entries added to its environment
	URL          string        // streamable HTTP endpoint
	Headers      []string      // "Name: value" lines sent with every HTTP request
	Tools        []string      // expose only these tools (nil = all)
	Prefix       string        // prepended to each tool's name
	StartTimeout time.Duration // bounds starting the server and its handshake (0 = 30 s)
	MaxMessage   int           // bytes of one message from the server (0 = DefaultMaxMessage)
}

// DefaultMaxMessage bounds one message from a server when Config sets no
// bound: a line of a stdio server's output, an HTTP response body or
// event stream. Past it the call fails and the session is ended.
const DefaultMaxMessage = 16 << 20

// validName is what a tool's name must be: the rule of OpenAI's function
// names, so that any chat format can carry it.
var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Server is a running MCP server and its tools.
type Server struct {
	client *Client
	tools  []envs.Tool
}

// Start starts (or connects to) the server, runs the handshake and lists
// its tools. It fails when the server cannot be started, the handshake or
// tools/list fails, Tools names a tool the server does not have, or a tool
// to expose has a name (with Prefix) that is not 1-64 letters, digits, _
// or -.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.MaxMessage <= 0 {
		cfg.MaxMessage = DefaultMaxMessage
	}
	dial, err := dialer(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	c := newClient(cfg.Name, dial, cfg.StartTimeout)
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	infos, err := c.listTools(ctx)
	if err != nil {
		c.Close()
		return nil, err
	}
	s := &Server{client: c}
	var names []string
	for _, in := range infos {
		names = append(names, in.Name)
		if len(cfg.Tools) > 0 && !slices.Contains(cfg.Tools, in.Name) {
			continue
		}
		name := cfg.Prefix + in.Name
		if !validName.MatchString(name) {
			c.Close()
			return nil, fmt.Errorf("MCP server %s: tool name %q: want 1 to 64 letters, digits, _ or - (as OpenAI function names)", cfg.Name, name)
		}
		desc := in.Description
		if desc == "" {
			desc = in.Title
		}
		s.tools = append(s.tools, &tool{client: c, remote: in.Name, name: name,
			description: desc, params: parameters(in.InputSchema)})
	}
	for _, want := range cfg.Tools {
		if !slices.Contains(names, want) {
			c.Close()
			return nil, fmt.Errorf("MCP server %s has no tool %q (it has: %s)", cfg.Name, want, envs.Printable(strings.Join(names, ", ")))
		}
	}
	return s, nil
}

// dialer returns how to open a session of the configured server.
func dialer(cfg Config) (func() (transport, error), error) {
	switch {
	case cfg.Command != "" && cfg.URL != "":
		return nil, fmt.Errorf("MCP server %s: give a command or a url, not both", cfg.Name)
	case cfg.Command != "":
		return func() (transport, error) { return startStdio(cfg.Command, cfg.Args, cfg.Env, cfg.MaxMessage) }, nil
	case cfg.URL != "":
		if _, err := parseHeaders(cfg.Headers); err != nil {
			return nil, fmt.Errorf("MCP server %s: %w", cfg.Name, err)
		}
		return func() (transport, error) { return newHTTPTransport(cfg.URL, cfg.Headers, cfg.MaxMessage) }, nil
	}
	return nil, fmt.Errorf("MCP server %s: needs a command (stdio) or a url (streamable HTTP)", cfg.Name)
}

// Tools are the server's tools, in the order it listed them.
func (s *Server) Tools() []envs.Tool { return s.tools }

// Client is the server's connection, shared by its tools.
func (s *Server) Client() *Client { return s.client }

// Close stops the server (or ends the HTTP session).
func (s *Server) Close() error { return s.client.Close() }
