// Package agent assembles a tool-using agent from a run's configuration,
// in one place for training, dry runs, chat and the benchmarks: its tools,
// tokenizer and chat format, episode settings and episode factories
// (agent.go), and the model's run mode and the Sampler that decodes for it
// (sampler.go).
package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/synth"
	"github.com/agentrl/agentrl/envs/tools/all"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/toolcall"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/rollout"
)

// Spec is what an agent is assembled from.
type Spec struct {
	// Config gives the tools (tools.*) and the episode settings (env.*).
	Config config.Config
	// Index is the search index that search and lookup read ("" = none).
	Index string
	// TokenizerDir holds the policy's tokenizer; "" builds the word-level
	// tokenizer of World, laid out in the chat format of the tiny model
	// (Config's model.tiny: tinyChatFamily).
	TokenizerDir string
	// World is the synthetic world, nil when the tasks come from files.
	// With fresh worlds it is their vocabulary world (whose index is
	// Index), and Names gives every other world's names.
	World *synth.World
	// Names, for fresh worlds, gives more texts for the word-level
	// tokenizer of World from the texts it is built from: every name of
	// their pool in every context those texts put a name in
	// (synth.Pool.Contexts), so that it holds every world's names.
	Names func(texts []string) []string
	// Worlds maps the IDs of fresh worlds to their search indexes, added
	// as AddWorld does.
	Worlds map[string]string
	// ShowSchemas lists the tools' JSON schemas in the system prompt.
	ShowSchemas bool
	// RewardErrors, when set, binds the scorer of env.rewards.external to
	// the episodes and receives its failures (each counted 0); nil leaves
	// the external reward out.
	RewardErrors func(error)
}

// Agent is all that plays an episode but the model: the tools, the
// tokenizer and its chat format, and the episode settings. Its Episode and
// RAGEpisode methods are the rollout scheduler's episode factories.
type Agent struct {
	Tools     []envs.Tool
	Schemas   []json.RawMessage // the tools' schemas listed in the system prompt, nil when hidden
	Tokenizer *tokenizer.Tokenizer
	Format    *tokenizer.ChatFormat
	Chat      rollout.Chat   // Format as the rollout scheduler uses it, with env.context's mode
	Env       envs.EnvConfig // env.*, with the external scorer bound when asked for and the format's call syntax
	toolset   *all.Toolset   // owns the MCP servers behind Tools
	searchK   int            // passages per search (tools.search.k), for the worlds' search tools
	worlds    worlds         // the fresh worlds' tools (worlds.go)
}

// New assembles the agent of s: the policy's tokenizer (read first, so a
// missing one is reported before any tool starts), the tools, the
// external scorer, the word-level tokenizer of a synthetic world when no
// tokenizer was given, and the chat format.
func New(ctx context.Context, s Spec) (*Agent, error) {
	a := &Agent{Env: s.Config.Env, searchK: s.Config.Tools.Search.K}
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()
	var err error
	if s.TokenizerDir != "" {
		if a.Tokenizer, err = tokenizer.Load(s.TokenizerDir); err != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
	}
	if a.toolset, err = buildTools(ctx, s.Config.Tools, s.Index); err != nil {
		return nil, err
	}
	a.Tools = a.toolset.Tools
	if s.RewardErrors != nil {
		scorer, err := externalScorer(s.Config.Env.Rewards.External)
		if err != nil {
			return nil, err
		}
		a.Env.External = envs.ExternalConfig{Scorer: scorer, OnError: s.RewardErrors}
	}
	if a.Tokenizer == nil {
		if s.World == nil {
			return nil, fmt.Errorf("model.path is empty and data.source is not synthetic: a tokenizer is needed (give model.path)")
		}
		family := tinyChatFamily(s.Config.Model.Tiny)
		if a.Tokenizer, err = wordTokenizer(ctx, s.World, a.Tools, s.Names, family); err != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
	}
	if a.Format, err = tokenizer.NewChatFormat(a.Tokenizer); err != nil {
		return nil, err
	}
	if a.Format, err = a.Format.WithOptions(s.Config.Model.Chat.Options()); err != nil {
		return nil, fmt.Errorf("model.chat (reasoning_effort %q, preserve_thinking %v): %w",
			s.Config.Model.Chat.ReasoningEffort, s.Config.Model.Chat.PreserveThinking, err)
	}
	a.Env.Calls = a.Format.CallSyntax() // the turns are read as the format writes calls
	mode, err := rollout.ParseContextMode(s.Config.Env.Context)
	if err != nil {
		return nil, err
	}
	if mode == rollout.ContextAuto && a.Tokenizer.WordLevel() {
		// A word-level tokenizer (a synthetic world's, made here or read
		// back from a checkpoint) is no served model's, though laid out as
		// Qwen3: its tiny demo models keep the appended sequence unless
		// asked otherwise, fresh or resumed.
		mode = rollout.ContextAppend
	}
	if ctx := (rollout.Context{Mode: mode}); ctx.Renders() && a.Format.CallSyntax() == toolcall.LlamaJSON {
		// The rendering contexts read a turn's calls back as Hermes or
		// Qwen3.5 XML blocks.
		return nil, fmt.Errorf("env.context: %s is not implemented for a model that writes %s tool calls (its template appends: use append)",
			mode, a.Format.CallSyntax())
	}
	for _, id := range slices.Sorted(maps.Keys(s.Worlds)) {
		if err := a.AddWorld(id, s.Worlds[id]); err != nil {
			return nil, err
		}
	}
	a.Chat = rollout.NewChat(a.Format).WithContext(rollout.Context{Mode: mode, Turns: s.Config.Env.ContextTurns})
	if s.ShowSchemas {
		if a.Schemas, err = envs.Schemas(a.Tools); err != nil {
			return nil, err
		}
	}
	ok = true
	return a, nil
}

// Close stops the MCP servers behind the tools and closes the worlds'
// indexes.
func (a *Agent) Close() {
	if a != nil {
		a.closeWorlds()
	}
	if a != nil && a.toolset != nil {
		a.toolset.Close()
		a.toolset = nil
	}
}

// Tool is the agent's tool called name, nil when it has none.
func (a *Agent) Tool(name string) envs.Tool { return toolByName(a.Tools, name) }

// Episode starts the tool-using agent's episode of task: the system prompt
// with the tools block, the question, a ToolEnv over the agent's tools
// (its world's, ToolsFor).
func (a *Agent) Episode(task envs.Task) (rollout.Setup, error) {
	tools, err := a.ToolsFor(task)
	if err != nil {
		return rollout.Setup{}, err
	}
	env, err := envs.NewToolEnv(task, tools, a.Env)
	if err != nil {
		return rollout.Setup{}, err
	}
	return rollout.Setup{System: toolcall.SystemPrompt, User: task.Question, Tools: a.Schemas, Env: env}, nil
}

// RAGEpisodes is the naive-RAG baseline's episode factory: the question's
// top-k passages are retrieved once and put in the prompt; one answer
// turn, no tools.
func (a *Agent) RAGEpisodes(ctx context.Context) rollout.Factory {
	return func(task envs.Task) (rollout.Setup, error) {
		tools, err := a.ToolsFor(task)
		if err != nil {
			return rollout.Setup{}, err
		}
		user, err := ragUser(ctx, tools, task)
		if err != nil {
			return rollout.Setup{}, err
		}
		cfg := a.Env
		cfg.MaxTurns = 1
		env, err := envs.NewToolEnv(task, nil, cfg)
		if err != nil {
			return rollout.Setup{}, err
		}
		return rollout.Setup{System: toolcall.RAGSystemPrompt, User: user, Env: env}, nil
	}
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
