// Package all links every tool package into a binary.
package all

import (
	_ "github.com/agentrl/agentrl/envs/tools/calculator"
	_ "github.com/agentrl/agentrl/envs/tools/code"
	_ "github.com/agentrl/agentrl/envs/tools/search"
)
