package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/synth"
	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/toolcall"
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
	msgs := []tokenizer.Message{{Role: "system", Content: toolcall.SystemPrompt}, {Role: "user", Content: t.Question}}
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
	msgs = append(msgs, tokenizer.Message{Role: "assistant", Content: toolcall.Answer(answer)})
	return msgs, nil
}

// ragUser is the naive-RAG baseline's user message: the question and the
// passages retrieved for it once.
func ragUser(ctx context.Context, tools []envs.Tool, t envs.Task) (string, error) {
	res, err := callTool(ctx, tools, search.SearchName, map[string]string{"query": t.Question})
	if err != nil {
		return "", fmt.Errorf("naive RAG retrieval for %s: %w", t.ID, err)
	}
	return ragPrompt(t.Question, res.Content), nil
}

// ragPrompt is the naive-RAG user message of a question and its passages,
// rendered as the search tool renders them.
func ragPrompt(question, passages string) string {
	return "Question: " + question + "\nPassages:\n" + passages
}

// ReadingDemonstration is a warm-start demonstration of reading: the
// naive-RAG prompt of task t, whose passages are the question's supporting
// passages (one per hop) and those a search for the question's text
// returns, in an order drawn from rng, answered in one turn. No search is
// made by the assistant.
func ReadingDemonstration(ctx context.Context, w *synth.World, t envs.Task, tools []envs.Tool, rng *rand.Rand) ([]tokenizer.Message, error) {
	res, err := callTool(ctx, tools, search.SearchName, map[string]string{"query": t.Question})
	if err != nil {
		return nil, fmt.Errorf("reading demonstration of %s: %w", t.ID, err)
	}
	var ps []search.Passage
	seen := map[string]bool{}
	for _, title := range append(append([]string{}, t.Support...), res.Refs...) {
		p, ok := w.Passage(title)
		if !ok {
			return nil, fmt.Errorf("reading demonstration of %s: no passage titled %q", t.ID, title)
		}
		if !seen[title] {
			seen[title] = true
			ps = append(ps, p)
		}
	}
	rng.Shuffle(len(ps), func(i, j int) { ps[i], ps[j] = ps[j], ps[i] })
	return []tokenizer.Message{
		{Role: "system", Content: toolcall.RAGSystemPrompt},
		{Role: "user", Content: ragPrompt(t.Question, search.FormatDocs(ps))},
		{Role: "assistant", Content: toolcall.Answer(t.Answers[0])},
	}, nil
}

// The queries of a SearchDemonstration.
const (
	QueryQuestion = iota // one search for the question's text, falling back to the name
	QueryName            // one search for the name the question mentions
	QueryRetry           // a search for the question's other words (no results), then the name
	QueryConfirm         // QueryQuestion's search, then one for the answer's name it returned
	QueryFollow          // a search for the question's text, then one for the name it mentions
)

// SearchDemonstration is a warm-start demonstration of the tool-call
// format on a 1-hop task: the searches an untrained model writes (the
// question's text, or the name it mentions; or, with QueryRetry, the
// question without the name first), their real results, then the answer
// read off the last result. Every query is made of the question's words,
// except QueryConfirm's second, which searches for the answer's name as
// the first result gave it (a confirmation: the answer stays that name).
// QueryFollow searches the question's text, then the name it mentions,
// and answers what the second result says, never the name searched.
// A task of more than one hop is an error.
func SearchDemonstration(ctx context.Context, t envs.Task, tools []envs.Tool, queries int) ([]tokenizer.Message, error) {
	if t.Hops != 1 || len(t.Support) != 1 || len(t.Answers) == 0 {
		return nil, fmt.Errorf("search demonstration of %s: want a 1-hop question with its supporting passage, got %d hops", t.ID, t.Hops)
	}
	name, answer := t.Support[0], t.Answers[0]
	msgs := []tokenizer.Message{{Role: "system", Content: toolcall.SystemPrompt}, {Role: "user", Content: t.Question}}
	search1 := func(query string) (string, error) {
		args, _ := json.Marshal(map[string]string{"query": query})
		res, err := callTool(ctx, tools, search.SearchName, map[string]string{"query": query})
		if err != nil {
			return "", fmt.Errorf("search demonstration of %s: %w", t.ID, err)
		}
		msgs = append(msgs, tokenizer.Message{Role: "assistant", ToolCalls: []tokenizer.ToolCall{{Name: search.SearchName, Arguments: args}}},
			tokenizer.Message{Role: "tool", Content: res.Content})
		return res.Content, nil
	}
	var queryList []string
	switch queries {
	case QueryQuestion, QueryConfirm:
		res, err := callTool(ctx, tools, search.SearchName, map[string]string{"query": t.Question})
		if err != nil {
			return nil, fmt.Errorf("search demonstration of %s: %w", t.ID, err)
		}
		queryList = []string{name}
		if strings.Contains(res.Content, answer) {
			queryList = []string{t.Question}
		}
		if queries == QueryConfirm {
			queryList = append(queryList, answer)
		}
	case QueryName:
		queryList = []string{name}
	case QueryFollow:
		queryList = []string{t.Question, name}
	case QueryRetry:
		rest := strings.TrimSuffix(strings.TrimSuffix(t.Question, "."), " of "+name)
		queryList = []string{rest, name}
	default:
		return nil, fmt.Errorf("search demonstration of %s: unknown queries %d", t.ID, queries)
	}
	var last string
	for _, q := range queryList {
		var err error
		if last, err = search1(q); err != nil {
			return nil, err
		}
	}
	if !strings.Contains(last, answer) {
		return nil, fmt.Errorf("search demonstration of %s: the search for %q does not return the answer %q", t.ID, queryList[len(queryList)-1], answer)
	}
	return append(msgs, tokenizer.Message{Role: "assistant", Content: toolcall.Answer(answer)}), nil
}

// FirstSearch is a warm-start demonstration of a first tool call on a task
// of any hop count: the user's question, then one search for its text. It
// ends at the call: neither the result nor what follows is shown, so it
// teaches how an episode starts, not how a chain goes on.
func FirstSearch(t envs.Task) []tokenizer.Message {
	args, _ := json.Marshal(map[string]string{"query": t.Question})
	return []tokenizer.Message{{Role: "system", Content: toolcall.SystemPrompt}, {Role: "user", Content: t.Question},
		{Role: "assistant", ToolCalls: []tokenizer.ToolCall{{Name: search.SearchName, Arguments: args}}}}
}

// wordTokenizer makes the tiny word-level tokenizer of the synthetic
// world, with family's chat template: every piece of every text the agent
// can see or say (the world's texts, prompts and demonstrations rendered
// in that format, search results), and, when names is not nil (fresh
// worlds), the texts it gives from those.
func wordTokenizer(ctx context.Context, w *synth.World, tools []envs.Tool, names func([]string) []string,
	family tokenizer.Family) (*tokenizer.Tokenizer, error) {
	boot, err := tokenizer.BuildWordLevelAs(family, nil, toolcall.SpecialTokens())
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
	for _, split := range [][]envs.Task{w.Train, w.Test, w.OOD, w.Val} {
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
			// A search for the question's own text, as the warm start's
			// search demonstrations and an untrained model write it: the
			// question's last word and punctuation run into the call's
			// closing ("Gorko.\"}}\n"), a piece no scripted demonstration has.
			s, err = cf.RenderText(FirstSearch(t), schemas, false)
			if err != nil {
				return nil, err
			}
			texts = append(texts, s)
			// The reading demonstration, whose prompt lists more passages
			// than a search returns ("Doc 3").
			msgs, err = ReadingDemonstration(ctx, w, t, tools, rand.New(rand.NewPCG(0, 0)))
			if err != nil {
				return nil, err
			}
			s, err = cf.RenderText(msgs, nil, false)
			if err != nil {
				return nil, err
			}
			texts = append(texts, s)
			rag, err := ragUser(ctx, tools, t)
			if err != nil {
				return nil, err
			}
			s, err = cf.RenderText([]tokenizer.Message{{Role: "system", Content: toolcall.RAGSystemPrompt}, {Role: "user", Content: rag}}, nil, true)
			if err != nil {
				return nil, err
			}
			texts = append(texts, s)
		}
	}
	if names != nil {
		texts = append(texts, names(texts)...)
	}
	// Error observations the agent may meet.
	texts = append(texts, "Error: ", "No results.", "[truncated", "chars]")
	return tokenizer.BuildWordLevelAs(family, texts, toolcall.SpecialTokens())
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
