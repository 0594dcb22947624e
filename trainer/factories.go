package trainer

import (
	"context"
	"encoding/json"

	"github.com/agentrl/agentrl/agent/protocol"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/rollout"
)

// envConfig is the run's env section with the external reward's scorer
// bound.
func (t *Trainer) envConfig() envs.EnvConfig {
	e := t.cfg.Env
	e.External = envs.ExternalConfig{Scorer: t.scorer,
		OnError: func(err error) { t.log.Warn().Err(err).Msg("external reward failed (counted 0)") }}
	return e
}

// agentFactory starts the tool-using agent's episode: the system prompt
// with the tools block, the question, a ToolEnv over the enabled tools.
func (t *Trainer) agentFactory(task envs.Task) (rollout.Setup, error) {
	env, err := envs.NewToolEnv(task, t.tools, t.envConfig())
	if err != nil {
		return rollout.Setup{}, err
	}
	return rollout.Setup{System: protocol.SystemPrompt, User: task.Question, Tools: t.promptTools(), Env: env}, nil
}

// promptTools are the tool schemas listed in the system prompt, when
// SchemasShown.
func (t *Trainer) promptTools() []json.RawMessage {
	if !SchemasShown(t.cfg) {
		return nil
	}
	return t.schemas
}

// SchemasShown reports whether the system prompt lists the tools' JSON
// schemas under cfg's tools.schemas: not under hide, nor under auto for
// the synthetic world's from-scratch models (they cannot read JSON
// schemas; they learn the protocol from demonstrations).
func SchemasShown(cfg config.Config) bool {
	switch cfg.Tools.Schemas {
	case "hide":
		return false
	case "auto":
		return cfg.Data.Source != "synthetic"
	}
	return true
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
		return rollout.Setup{System: protocol.RAGSystemPrompt, User: user, Env: env}, nil
	}
}
