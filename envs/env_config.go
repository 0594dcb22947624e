package envs

import (
	"fmt"
	"time"

	"github.com/agentrl/agentrl/envs/reward"
	"github.com/agentrl/agentrl/internal/deftag"
	"github.com/agentrl/agentrl/toolcall"
)

// EnvConfig bounds an episode and weighs its rewards. The struct tags
// hold each setting's one default and description: DefaultEnvConfig reads
// them, and the trainer's configuration embeds EnvConfig as its env
// section (trainer/config), documenting the same tags.
type EnvConfig struct {
	// MaxTurns is the number of assistant turns; a turn that calls tools
	// when it is the last allowed one ends the episode ("max_turns").
	MaxTurns int `yaml:"max_turns" default:"4" doc:"assistant turns per episode"`
	// MaxTokens is the token budget of the whole trajectory, prompt
	// included; an action whose TotalTokens reaches it ends the episode
	// ("max_tokens") unless it gives the final answer.
	MaxTokens int `yaml:"max_tokens" default:"768" doc:"token budget of a whole trajectory, prompt included"`
	// MaxTurnTokens bounds the tokens generated in one turn; the rollout
	// enforces it (a turn cut there arrives with Action.TurnTruncated).
	MaxTurnTokens int `yaml:"max_turn_tokens" default:"48" doc:"tokens generated per turn at most"`
	// ToolTimeout bounds each tool call; a call still running then becomes
	// an error observation.
	ToolTimeout time.Duration `yaml:"tool_timeout" default:"5s" doc:"time limit of one tool call"`
	// MaxObservationChars caps each tool response, in characters, truncation
	// marker included.
	MaxObservationChars int `yaml:"max_observation_chars" default:"600" doc:"characters of a tool response kept"`
	// Context is how the built-in loop makes each turn's context
	// (trainer/rollout.ContextMode): "" for the chat template's default.
	Context string `yaml:"context" default:"" doc:"each turn's context: append (one growing sequence), template (the chat template renders the conversation, as serving does), window (the question and the last context_turns turns) or summary (a summary of the turns before those); \"\" = template for a model whose chat template rewrites history (Qwen3), append otherwise and for a synthetic world's word-level tokenizer. A context that does not extend the sequence starts a new segment (docs/contexts.md)"`
	// ContextTurns is the number of latest turns window and summary keep.
	ContextTurns int `yaml:"context_turns" default:"2" doc:"turns that env.context window and summary keep whole"`
	// Rewards weighs the outcome, format, process and external rewards.
	Rewards reward.Config `yaml:"rewards" doc:"reward weights"`
	// External binds the scorer of Rewards.External, built by the caller
	// (see Outcome); it is wiring, not configuration.
	External ExternalConfig `yaml:"-" json:"-"`
	// Calls is the syntax the policy writes its tool calls in, its chat
	// format's (tokenizer.ChatFormat.CallSyntax): Step and the format
	// reward read the turns with it. Wiring, set where the environment is
	// built from the agent; the zero value is Hermes.
	Calls toolcall.CallSyntax `yaml:"-" json:"-"`
}

// MinObservationChars is the least MaxObservationChars accepted: room for
// the truncation marker and some text.
const MinObservationChars = 64

// DefaultEnvConfig returns the defaults of the struct tags: 4 turns, 768
// tokens of which 48 per turn, 5 s per tool call, 600 characters per
// observation (a passage or two), and reward.DefaultConfig.
func DefaultEnvConfig() EnvConfig {
	var c EnvConfig
	deftag.MustApply(&c)
	return c
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
	case c.MaxObservationChars < MinObservationChars:
		return fmt.Errorf("env config: max_observation_chars is %d, want at least %d", c.MaxObservationChars, MinObservationChars)
	}
	if c.Calls != toolcall.Hermes && c.Calls != toolcall.LlamaJSON && c.Calls != toolcall.QwenXML && c.Calls != toolcall.Gemma4 {
		return fmt.Errorf("env config: tool-call syntax %v is not one agentrl parses (%v, %v, %v, %v)", c.Calls,
			toolcall.Hermes, toolcall.LlamaJSON, toolcall.QwenXML, toolcall.Gemma4)
	}
	if err := c.Rewards.Validate(); err != nil {
		return fmt.Errorf("env config: %w", err)
	}
	return nil
}
