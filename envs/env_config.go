package envs

import (
	"fmt"
	"math"
	"time"

	"github.com/agentrl/agentrl/envs/reward"
)

// EnvConfig bounds an episode and weighs its rewards.
type EnvConfig struct {
	// MaxTurns is the number of assistant turns; a turn that calls tools
	// when it is the last allowed one ends the episode ("max_turns").
	MaxTurns int `yaml:"max_turns"`
	// MaxTokens is the token budget of the whole trajectory, prompt
	// included; an action whose TotalTokens reaches it ends the episode
	// ("max_tokens") unless it gives the final answer.
	MaxTokens int `yaml:"max_tokens"`
	// ToolTimeout bounds each tool call; a call still running then becomes
	// an error observation.
	ToolTimeout time.Duration `yaml:"tool_timeout"`
	// MaxObservationChars caps each tool response, in characters, truncation
	// marker included.
	MaxObservationChars int `yaml:"max_observation_chars"`
	// Rewards weighs the outcome, format and process rewards.
	Rewards reward.Config `yaml:"rewards"`
	// External adds a reward computed outside (see Outcome).
	External ExternalConfig `yaml:"-"`
}

// minObservationChars leaves room for the truncation marker and some text.
const minObservationChars = 64

// DefaultEnvConfig returns the defaults: 6 turns (multi-hop QA needs 2-4
// searches plus the answer), 8192 tokens, 10 s per tool call, 4000
// characters per observation (about 1000 tokens, a few passages), and
// reward.DefaultConfig.
func DefaultEnvConfig() EnvConfig {
	return EnvConfig{
		MaxTurns:            6,
		MaxTokens:           8192,
		ToolTimeout:         10 * time.Second,
		MaxObservationChars: 4000,
		Rewards:             reward.DefaultConfig(),
	}
}

// Validate checks every limit and the reward configuration.
func (c EnvConfig) Validate() error {
	switch {
	case c.MaxTurns < 1:
		return fmt.Errorf("env config: max_turns is %d, want at least 1", c.MaxTurns)
	case c.MaxTokens < 1:
		return fmt.Errorf("env config: max_tokens is %d, want at least 1", c.MaxTokens)
	case c.ToolTimeout <= 0:
		return fmt.Errorf("env config: tool_timeout is %s, want a positive duration", c.ToolTimeout)
	case c.MaxObservationChars < minObservationChars:
		return fmt.Errorf("env config: max_observation_chars is %d, want at least %d", c.MaxObservationChars, minObservationChars)
	}
	if math.IsNaN(c.External.Weight) || math.IsInf(c.External.Weight, 0) {
		return fmt.Errorf("env config: external reward weight is %v, want a finite number", c.External.Weight)
	}
	if err := c.Rewards.Validate(); err != nil {
		return fmt.Errorf("env config: %w", err)
	}
	return nil
}
