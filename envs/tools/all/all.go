// Package all is the tool registry: every tool an agent can be given,
// built from typed settings. The built-in tools are picked by name; MCP
// servers and HTTP endpoints add theirs. All of them go through one
// Build, which checks each the same way and keeps their names unique.
package all

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/tools/calculator"
	"github.com/agentrl/agentrl/envs/tools/code"
	"github.com/agentrl/agentrl/envs/tools/httptool"
	"github.com/agentrl/agentrl/envs/tools/mcp"
	"github.com/agentrl/agentrl/envs/tools/search"
)

// Config is what an agent's tools are built from.
type Config struct {
	Enabled []string          // built-in tools, by name (see Names), in order
	Search  search.Config     // the index of search and lookup, and search's k
	Code    code.Sandbox      // the code tool's sandbox
	MCP     []mcp.Config      // MCP servers, each adding its tools
	HTTP    []httptool.Config // HTTP tools, one each
}

// builtin are the tools Config.Enabled can name, each with its typed
// constructor.
var builtin = map[string]func(Config) (envs.Tool, error){
	calculator.Name:   func(Config) (envs.Tool, error) { return calculator.New(), nil },
	code.Name:         func(c Config) (envs.Tool, error) { return code.New(c.Code) },
	search.SearchName: func(c Config) (envs.Tool, error) { return search.OpenSearch(c.Search) },
	search.LookupName: func(c Config) (envs.Tool, error) { return search.OpenLookup(c.Search) },
}

// Names lists the built-in tools, sorted.
func Names() []string { return slices.Sorted(maps.Keys(builtin)) }

// Toolset is an agent's tools: the built-in ones of Config.Enabled, then
// the tools of each MCP server, then the HTTP tools. Close stops the MCP
// servers.
type Toolset struct {
	Tools   []envs.Tool
	servers []*mcp.Server
}

// Build builds the tools of c and starts its MCP servers. It fails on an
// unknown or repeated name in c.Enabled, on a tool that cannot be built or
// started, on a tool that envs.CheckTool refuses, and on two tools of the
// same name; the servers started by then are stopped.
func Build(ctx context.Context, c Config) (*Toolset, error) {
	ts := &Toolset{}
	ok := false
	defer func() {
		if !ok {
			ts.Close()
		}
	}()
	for i, name := range c.Enabled {
		build, known := builtin[name]
		if !known {
			return nil, fmt.Errorf("unknown tool %q (known: %s)", name, strings.Join(Names(), ", "))
		}
		if slices.Contains(c.Enabled[:i], name) {
			return nil, fmt.Errorf("tool %q listed twice", name)
		}
		t, err := build(c)
		if err == nil {
			err = ts.add(t)
		}
		if err != nil {
			return nil, fmt.Errorf("build tool %q: %w", name, err)
		}
	}
	for i, s := range c.MCP {
		srv, err := mcp.Start(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("tools.mcp[%d]: %w", i, err)
		}
		ts.servers = append(ts.servers, srv)
		for _, t := range srv.Tools() {
			if err := ts.add(t); err != nil {
				return nil, fmt.Errorf("tools.mcp[%d]: %w", i, err)
			}
		}
	}
	for i, h := range c.HTTP {
		t, err := httptool.New(h)
		if err == nil {
			err = ts.add(t)
		}
		if err != nil {
			return nil, fmt.Errorf("tools.http[%d]: %w", i, err)
		}
	}
	ok = true
	return ts, nil
}

// add checks t and appends it: its name must be new to the set.
func (ts *Toolset) add(t envs.Tool) error {
	if err := envs.CheckTool(t); err != nil {
		return err
	}
	for _, have := range ts.Tools {
		if have.Name() == t.Name() {
			return fmt.Errorf("two tools are called %q (use tools.mcp[].prefix to tell a server's tools apart)", t.Name())
		}
	}
	ts.Tools = append(ts.Tools, t)
	return nil
}

// Close stops the MCP servers, all at once: each stop is bounded, and a
// slow one does not make the others wait.
func (ts *Toolset) Close() {
	var wg sync.WaitGroup
	for _, s := range ts.servers {
		wg.Go(func() { s.Close() })
	}
	wg.Wait()
	ts.servers = nil
}
