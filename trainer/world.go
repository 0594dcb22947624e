package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentrl/agentrl/agent/protocol"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/synth"
	"github.com/agentrl/agentrl/envs/tasks"
	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trainer/config"
)

// data is what the run trains and evaluates on.
type data struct {
	world     *synth.World // nil for dataset files
	train     []envs.Task
	eval      []envs.Task
	indexPath string
}

// loadData generates the synthetic world (and its search index under
// runDir) or loads the dataset files.
func loadData(ctx context.Context, cfg config.Config, runDir string) (*data, error) {
	d := &data{indexPath: cfg.Tools.Search.Index}
	switch cfg.Data.Source {
	case "synthetic":
		sc := cfg.Data.Synthetic
		w, err := synth.Generate(synth.Config{Seed: int64(sc.Seed), Entities: sc.Entities, Questions: sc.Questions,
			MaxHops: sc.MaxHops, TestFraction: sc.TestFraction})
		if err != nil {
			return nil, err
		}
		d.world, d.train, d.eval = w, w.Train, w.Test
		if d.indexPath == "" {
			d.indexPath = filepath.Join(runDir, "index.db")
			if _, err := os.Stat(d.indexPath); err != nil {
				if err := search.BuildIndex(ctx, d.indexPath, w.Passages, nil); err != nil {
					return nil, fmt.Errorf("build the synthetic world's index: %w", err)
				}
			}
		}
	case "files":
		for _, p := range cfg.Data.Train {
			ts, err := tasks.Load(p, cfg.Data.Format)
			if err != nil {
				return nil, err
			}
			d.train = append(d.train, ts...)
		}
		for _, p := range cfg.Data.Eval {
			ts, err := tasks.Load(p, cfg.Data.Format)
			if err != nil {
				return nil, err
			}
			d.eval = append(d.eval, ts...)
		}
		if len(d.train) == 0 {
			return nil, fmt.Errorf("data.train: no training questions (data.source is files)")
		}
	default:
		return nil, fmt.Errorf("data.source %q: want synthetic or files", cfg.Data.Source)
	}
	if n := cfg.Data.MaxTrain; n > 0 && n < len(d.train) {
		d.train = d.train[:n]
	}
	if n := cfg.Data.MaxEval; n > 0 && n < len(d.eval) {
		d.eval = d.eval[:n]
	}
	return d, nil
}

// buildWordTokenizer makes the tiny word-level tokenizer of the synthetic
// world: every piece of every text the agent can see or say (the world's
// texts, rendered prompts and demonstrations, search results).
func buildWordTokenizer(ctx context.Context, w *synth.World, tools []envs.Tool) (*tokenizer.Tokenizer, error) {
	boot, err := tokenizer.BuildWordLevel(nil, protocol.SpecialTokens())
	if err != nil {
		return nil, err
	}
	cf, err := tokenizer.NewChatFormat(boot)
	if err != nil {
		return nil, err
	}
	schemas, err := envs.Schemas(tools)
	if err != nil {
		return nil, err
	}
	texts := w.Texts()
	for _, split := range [][]envs.Task{w.Train, w.Test} {
		for _, t := range split {
			msgs, err := demoMessages(ctx, w, t, tools, false)
			if err != nil {
				return nil, err
			}
			s, err := cf.RenderText(msgs, schemas, false)
			if err != nil {
				return nil, err
			}
			texts = append(texts, s)
			rag, err := ragUser(ctx, tools, t)
			if err != nil {
				return nil, err
			}
			s, err = cf.RenderText([]tokenizer.Message{{Role: "system", Content: protocol.RAGSystemPrompt}, {Role: "user", Content: rag}}, nil, true)
			if err != nil {
				return nil, err
			}
			texts = append(texts, s)
		}
	}
	// Error observations the agent may meet.
	texts = append(texts, "Error: ", "No results.", "[truncated", "chars]")
	return tokenizer.BuildWordLevel(texts, protocol.SpecialTokens())
}

// toolByName finds an enabled tool.
func toolByName(tools []envs.Tool, name string) envs.Tool {
	for _, t := range tools {
		if t.Name() == name {
			return t
		}
	}
	return nil
}

// callTool runs a tool directly (demonstrations, naive RAG).
func callTool(ctx context.Context, tools []envs.Tool, name string, args any) (envs.Result, error) {
	t := toolByName(tools, name)
	if t == nil {
		return envs.Result{}, fmt.Errorf("tool %q is not enabled", name)
	}
	b, _ := json.Marshal(args)
	return t.Call(ctx, b)
}
