// Package all links every tool package into a binary: importing it for its
// side effects registers each tool with envs.DefaultRegistry, as a program
// imports database/sql drivers. cmd/trainer imports it, so every tool a
// configuration or `trainer chat --tools` can name is in bin/trainer.
package all

import (
	_ "github.com/agentrl/agentrl/envs/tools/calculator" // "calculator"
	_ "github.com/agentrl/agentrl/envs/tools/code"       // "code"
	_ "github.com/agentrl/agentrl/envs/tools/search"     // "search", "lookup"
)
