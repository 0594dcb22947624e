package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/reward"
	"github.com/agentrl/agentrl/envs/reward/external"
	"github.com/agentrl/agentrl/envs/tools/code"
	"github.com/agentrl/agentrl/envs/tools/httptool"
	"github.com/agentrl/agentrl/envs/tools/mcp"
	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/trainer/config"
)

// Toolset is the agent's tools: the registered ones of tools.enabled, then
// the tools of the MCP servers (tools.mcp), then the HTTP tools
// (tools.http). Close stops the MCP servers.
type Toolset struct {
	Tools   []envs.Tool
	servers []*mcp.Server
}

// BuildTools builds the enabled tools through the registry (search and
// lookup over indexPath) and starts the configured MCP servers. Tool
// names must be unique across all of them.
func BuildTools(ctx context.Context, cfg config.ToolsConfig, indexPath string) (*Toolset, error) {
	tc := map[string]map[string]any{}
	for _, name := range cfg.Enabled {
		switch name {
		case search.SearchName:
			if indexPath == "" {
				return nil, fmt.Errorf("tools.search.index: the search tool needs an index (build one with `trainer index`)")
			}
			tc[name] = map[string]any{"index": indexPath, "k": cfg.Search.K}
		case search.LookupName:
			tc[name] = map[string]any{"index": indexPath}
		case code.Name:
			c := cfg.Code
			tc[name] = map[string]any{"python": c.Python, "cpu_time": c.CPUTime, "wall_time": c.WallTime,
				"memory_mb": c.MemoryMB, "processes": c.Processes, "disk_mb": c.DiskMB, "max_output": c.MaxOutput}
		}
	}
	tools, err := envs.Build(cfg.Enabled, tc)
	if err != nil {
		return nil, err
	}
	ts := &Toolset{Tools: tools}
	ok := false
	defer func() {
		if !ok {
			ts.Close()
		}
	}()
	for i, s := range cfg.MCP {
		srv, err := mcp.Start(ctx, mcp.Config{Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env, URL: s.URL,
			Headers: s.Headers, Tools: s.Tools, Prefix: s.Prefix, StartTimeout: s.StartTimeout, MaxMessage: s.MaxMessageMB << 20})
		if err != nil {
			return nil, fmt.Errorf("tools.mcp[%d]: %w", i, err)
		}
		ts.servers = append(ts.servers, srv)
		ts.Tools = append(ts.Tools, srv.Tools()...)
	}
	for i, h := range cfg.HTTP {
		t, err := httptool.New(httptool.Config{Name: h.Name, URL: h.URL, Description: h.Description,
			Parameters: json.RawMessage(h.Parameters), Headers: h.Headers, Retries: h.Retries,
			CrossOriginRedirects: h.CrossOriginRedirects})
		if err != nil {
			return nil, fmt.Errorf("tools.http[%d]: %w", i, err)
		}
		ts.Tools = append(ts.Tools, t)
	}
	var names []string
	for _, t := range ts.Tools {
		if slices.Contains(names, t.Name()) {
			return nil, fmt.Errorf("two tools are called %q (use tools.mcp[].prefix to tell a server's tools apart)", t.Name())
		}
		names = append(names, t.Name())
	}
	ok = true
	return ts, nil
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

// ExternalScorer is the scorer of env.rewards.external, nil when none is
// configured. A command that cannot be run is an error.
func ExternalScorer(x reward.External) (envs.Scorer, error) {
	limit := x.MaxOutputMB << 20
	switch {
	case len(x.Command) > 0:
		if err := external.CheckProgram(x.Command[0]); err != nil {
			return nil, fmt.Errorf("env.rewards.external.command: %w", err)
		}
		return external.Command{Argv: x.Command, MaxOutput: limit}, nil
	case x.URL != "":
		return external.HTTP{URL: x.URL, MaxOutput: limit}, nil
	}
	return nil, nil
}
