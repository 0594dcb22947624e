package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentrl/agentrl/agent/protocol"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/synth"
	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/tokenizer"
)

// Demonstration renders the scripted expert of the synthetic world on task
// t as a conversation: one search per hop (with the real search results of
// tools as tool messages), then the answer. An imperfect demonstration of
// a multi-hop question stops after the first hop and answers with what
// that hop found, which is wrong: the warm start learns the format and
// some bad habits that RL then has to fix.
func Demonstration(ctx context.Context, w *synth.World, t envs.Task, tools []envs.Tool, imperfect bool) ([]tokenizer.Message, error) {
	d, err := w.Demonstration(t)
	if err != nil {
		return nil, err
	}
	msgs := []tokenizer.Message{{Role: "system", Content: protocol.SystemPrompt}, {Role: "user", Content: t.Question}}
	answer := d.Answer
	steps := d.Steps
	if imperfect && len(steps) > 1 {
		steps = steps[:1]
		answer = steps[0].Found
	}
	for _, st := range steps {
		args, _ := json.Marshal(map[string]string{"query": st.Query})
		msgs = append(msgs, tokenizer.Message{Role: "assistant", ToolCalls: []tokenizer.ToolCall{{Name: search.SearchName, Arguments: args}}})
		res, err := callTool(ctx, tools, search.SearchName, map[string]string{"query": st.Query})
		if err != nil {
			return nil, fmt.Errorf("demonstration of %s: %w", t.ID, err)
		}
		msgs = append(msgs, tokenizer.Message{Role: "tool", Content: res.Content})
	}
	msgs = append(msgs, tokenizer.Message{Role: "assistant", Content: protocol.Answer(answer)})
	return msgs, nil
}

// ragUser is the naive-RAG baseline's user message: the question and the
// passages retrieved for it once.
func ragUser(ctx context.Context, tools []envs.Tool, t envs.Task) (string, error) {
	res, err := callTool(ctx, tools, search.SearchName, map[string]string{"query": t.Question})
	if err != nil {
		return "", fmt.Errorf("naive RAG retrieval for %s: %w", t.ID, err)
	}
	return "Question: " + t.Question + "\nPassages:\n" + res.Content, nil
}

// wordTokenizer makes the tiny word-level tokenizer of the synthetic
// world: every piece of every text the agent can see or say (the world's
// texts, rendered prompts and demonstrations, search results).
func wordTokenizer(ctx context.Context, w *synth.World, tools []envs.Tool) (*tokenizer.Tokenizer, error) {
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
			msgs, err := Demonstration(ctx, w, t, tools, false)
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

// toolByName finds a tool by name, nil when there is none.
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
