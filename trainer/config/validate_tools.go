package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentrl/agentrl/envs/reward/external"
)

// validateExternalTools checks tools.code, tools.mcp and tools.http: tool
// names are checked against each other when the tools are built.
func (c *Config) validateExternalTools(p *problems) {
	code := c.Tools.Code
	p.nonEmpty("tools.code.python", code.Python)
	p.positiveDuration("tools.code.cpu_time", code.CPUTime)
	p.positiveDuration("tools.code.wall_time", code.WallTime)
	p.atLeast("tools.code.memory_mb", code.MemoryMB, 1)
	p.atLeast("tools.code.processes", code.Processes, 1)
	p.atLeast("tools.code.disk_mb", code.DiskMB, 1)
	p.atLeast("tools.code.max_output", code.MaxOutput, 1)

	var names []string
	for i, s := range c.Tools.MCP {
		at := fmt.Sprintf("tools.mcp[%d]", i)
		p.uniqueName(at+".name", s.Name, &names)
		if (s.Command == "") == (s.URL == "") {
			p.add(at, "give exactly one of command (stdio) and url (streamable HTTP)")
		}
		for _, e := range s.Env {
			if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
				p.add(at+".env", "%q, want KEY=VALUE", e)
			}
		}
		p.headers(at+".headers", s.Headers)
		p.positiveDuration(at+".start_timeout", s.StartTimeout)
		p.atLeast(at+".max_message_mb", s.MaxMessageMB, 1)
	}
	names = nil
	for i, h := range c.Tools.HTTP {
		at := fmt.Sprintf("tools.http[%d]", i)
		p.uniqueName(at+".name", h.Name, &names)
		if !strings.HasPrefix(h.URL, "http://") && !strings.HasPrefix(h.URL, "https://") {
			p.add(at+".url", "%q, want an http:// or https:// URL", h.URL)
		}
		p.headers(at+".headers", h.Headers)
		p.atLeast(at+".retries", h.Retries, 0)
	}

	x := c.Env.Rewards.External
	if len(x.Command) > 0 && x.URL != "" {
		p.add("env.rewards.external", "give a command or a url, not both")
	}
	p.positiveDuration("env.rewards.external.timeout", x.Timeout)
	p.atLeast("env.rewards.external.max_output_mb", x.MaxOutputMB, 1)
	if len(x.Command) > 0 {
		if err := external.CheckProgram(x.Command[0]); err != nil {
			p.add("env.rewards.external.command", "%v", err)
		}
	}
}

// uniqueName checks that name is given and not among names, and adds it.
func (p *problems) uniqueName(path, name string, names *[]string) {
	switch {
	case name == "":
		p.add(path, "empty")
	case slices.Contains(*names, name):
		p.add(path, "%q is used twice", name)
	}
	*names = append(*names, name)
}

// headers checks "Name: value" lines.
func (p *problems) headers(path string, lines []string) {
	for _, l := range lines {
		if name, _, ok := strings.Cut(l, ":"); !ok || strings.TrimSpace(name) == "" {
			p.add(path, "%q, want \"Name: value\"", l)
		}
	}
}

func (p *problems) positiveDuration(path string, d time.Duration) {
	if d <= 0 {
		p.add(path, "%s, want a positive duration", d)
	}
}
