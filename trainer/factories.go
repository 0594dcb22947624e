package trainer

import (
	"context"
	"encoding/json"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/reward"
	"github.com/agentrl/agentrl/trainer/rollout"
)

// envConfig maps the run's env section onto the environment's config.
func (t *Trainer) envConfig() envs.EnvConfig {
	e := t.cfg.Env
	r := e.Rewards
	return envs.EnvConfig{MaxTurns: e.MaxTurns, MaxTokens: e.MaxTokens, ToolTimeout: e.ToolTimeout,
		MaxObservationChars: e.MaxObservationChars,
		Rewards: reward.Config{Scorer: r.Scorer, Outcome: r.Outcome, Format: r.Format, ValidCall: r.ValidCall,
			Support: r.Support, InvalidCall: r.InvalidCall, RepeatCall: r.RepeatCall},
		External: envs.ExternalConfig{Scorer: t.scorer, Weight: r.External.Weight, Timeout: r.External.Timeout,
			OnError: func(err error) { t.log.Warn().Err(err).Msg("external reward failed (counted 0)") }}}
}

// agentFactory starts the tool-using agent's episode: the system prompt
// with the tools block, the question, a ToolEnv over the enabled tools.
func (t *Trainer) agentFactory(task envs.Task) (rollout.Setup, error) {
	env, err := envs.NewToolEnv(task, t.tools, t.envConfig())
	if err != nil {
		return rollout.Setup{}, err
	}
	return rollout.Setup{System: SystemPrompt, User: task.Question, Tools: t.promptTools(), Env: env}, nil
}

// promptTools are the tool schemas listed in the system prompt: none for
// the synthetic world's from-scratch models under tools.schemas auto (they
// cannot read JSON schemas; they learn the protocol from demonstrations).
func (t *Trainer) promptTools() []json.RawMessage {
	switch t.cfg.Tools.Schemas {
	case "hide":
		return nil
	case "auto":
		if t.cfg.Data.Source == "synthetic" {
			return nil
		}
	}
	return t.schemas
}

// ragFactory is the naive-RAG baseline: the question's top-k passages are
// retrieved once and put in the prompt; one answer turn, no tools.
func (t *Trainer) ragFactory(ctx context.Context) rollout.Factory {
	return func(task envs.Task) (rollout.Setup, error) {
		user, err := ragUser(ctx, t.tools, task)
		if err != nil {
			return rollout.Setup{}, err
		}
		cfg := t.envConfig()
		cfg.MaxTurns = 1
		env, err := envs.NewToolEnv(task, nil, cfg)
		if err != nil {
			return rollout.Setup{}, err
		}
		return rollout.Setup{System: RAGSystemPrompt, User: user, Env: env}, nil
	}
}
