package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/reward"
	"github.com/agentrl/agentrl/envs/reward/external"
	"github.com/agentrl/agentrl/envs/tools/all"
	"github.com/agentrl/agentrl/envs/tools/code"
	"github.com/agentrl/agentrl/envs/tools/httptool"
	"github.com/agentrl/agentrl/envs/tools/mcp"
	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/trainer/config"
)

// buildTools builds the tools of a tools section through the registry:
// the enabled built-in ones (search and lookup over index), then the
// tools of the MCP servers, then the HTTP tools. Close the Toolset to stop
// the servers.
func buildTools(ctx context.Context, c config.ToolsConfig, index string) (*all.Toolset, error) {
	if index == "" && slices.Contains(c.Enabled, search.SearchName) {
		return nil, fmt.Errorf("tools.search.index: the search tool needs an index (build one with `trainer index`)")
	}
	return all.Build(ctx, toolsConfig(c, index))
}

// toolsConfig is the registry's typed form of a tools section.
func toolsConfig(c config.ToolsConfig, index string) all.Config {
	sb := code.DefaultSandbox()
	sb.Python = c.Code.Python
	sb.Limits = code.Limits{CPU: c.Code.CPUTime, Wall: c.Code.WallTime, MemoryMB: c.Code.MemoryMB,
		Processes: c.Code.Processes, DiskMB: c.Code.DiskMB, MaxOutput: c.Code.MaxOutput}
	out := all.Config{Enabled: c.Enabled, Search: search.Config{Index: index, K: c.Search.K}, Code: sb}
	for _, s := range c.MCP {
		out.MCP = append(out.MCP, mcp.Config{Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env, URL: s.URL,
			Headers: s.Headers, Tools: s.Tools, Prefix: s.Prefix, StartTimeout: s.StartTimeout, MaxMessage: s.MaxMessageMB << 20})
	}
	for _, h := range c.HTTP {
		out.HTTP = append(out.HTTP, httptool.Config{Name: h.Name, URL: h.URL, Description: h.Description,
			Parameters: json.RawMessage(h.Parameters), Headers: h.Headers, Retries: h.Retries,
			CrossOriginRedirects: h.CrossOriginRedirects})
	}
	return out
}

// externalScorer is the scorer of env.rewards.external, nil when none is
// configured. A command that cannot be run is an error.
func externalScorer(x reward.External) (envs.Scorer, error) {
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
