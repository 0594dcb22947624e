package trainer

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/synth"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trajectory"
)

// scriptedDemos renders n demonstrations (cycling through tasks in a
// shuffled order), a fraction of them imperfect.
func scriptedDemos(ctx context.Context, w *synth.World, tasks []envs.Task, tools []envs.Tool, n int, imperfect float64, rng *rand.Rand) ([][]tokenizer.Message, error) {
	order := rng.Perm(len(tasks))
	var out [][]tokenizer.Message
	for i := 0; i < n && len(tasks) > 0; i++ {
		t := tasks[order[i%len(order)]]
		msgs, err := agent.Demonstration(ctx, w, t, tools, rng.Float64() < imperfect)
		if err != nil {
			return nil, err
		}
		out = append(out, msgs)
	}
	return out, nil
}

// generalDemos renders n warm-start demonstrations of general skills only
// (sft.warm_start general, calls or follow): the even ones reading (the naive-RAG
// prompt of a training question of any hop count, with its supporting
// passages), the odd ones the tool-call format. With general, all on a
// 1-hop training question: of every four, one searches the question's
// text, one the name it mentions, one retries after a search that finds
// nothing, and one alternates between the first two. With calls, of every
// six: the question's text, the name, the retry, a search for the
// question's text confirmed by a search for the answer's name it
// returned (with follow: a search for the question's text, then one for
// the name it mentions, the answer read off the second result), and
// twice a multi-hop question's first search (FirstSearch:
// the demonstration ends at the call); tasks without a name to confirm or
// without a multi-hop question (a small world may have none) search the
// question's text in their place. Tasks are taken in a shuffled order,
// cycling. None shows a multi-hop question past its first search.
func generalDemos(ctx context.Context, w *synth.World, tasks []envs.Task, tools []envs.Tool, n int, warmStart string, rng *rand.Rand) ([][]tokenizer.Message, error) {
	var oneHop, multiHop, named []envs.Task
	for _, t := range tasks {
		if t.Hops == 1 {
			oneHop = append(oneHop, t)
			if _, ok := w.Passage(t.Answers[0]); ok {
				named = append(named, t)
			}
		} else {
			multiHop = append(multiHop, t)
		}
	}
	if len(tasks) == 0 || len(oneHop) == 0 {
		return nil, fmt.Errorf("warm start: no training questions (%d) or no 1-hop ones (%d) to demonstrate on", len(tasks), len(oneHop))
	}
	reading, searching := rng.Perm(len(tasks)), rng.Perm(len(oneHop))
	calls := warmStart == "calls" || warmStart == "follow"
	second := agent.QueryConfirm
	if warmStart == "follow" {
		second = agent.QueryFollow
	}
	var firsts, confirms []int
	if calls {
		firsts, confirms = rng.Perm(len(multiHop)), rng.Perm(len(named))
	}
	var out [][]tokenizer.Message
	for i := range n {
		var msgs []tokenizer.Message
		var err error
		j := i / 2
		switch {
		case i%2 == 0:
			msgs, err = agent.ReadingDemonstration(ctx, w, tasks[reading[j%len(reading)]], tools, rng)
		case !calls:
			queries := [4]int{agent.QueryQuestion, agent.QueryName, agent.QueryRetry, agent.QueryQuestion + (j/4)%2}[j%4]
			msgs, err = agent.SearchDemonstration(ctx, oneHop[searching[j%len(searching)]], tools, queries)
		case j%6 < 3:
			msgs, err = agent.SearchDemonstration(ctx, oneHop[searching[j%len(searching)]], tools, [3]int{agent.QueryQuestion, agent.QueryName, agent.QueryRetry}[j%6])
		case j%6 == 3 && len(named) > 0:
			msgs, err = agent.SearchDemonstration(ctx, named[confirms[j/6%len(confirms)]], tools, second)
		case j%6 > 3 && len(multiHop) > 0:
			msgs = agent.FirstSearch(multiHop[firsts[(2*(j/6)+j%6-4)%len(firsts)]])
		default:
			msgs, err = agent.SearchDemonstration(ctx, oneHop[searching[j%len(searching)]], tools, agent.QueryQuestion)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, msgs)
	}
	return out, nil
}

// demoFileMessage is one message of a demonstrations file: our form
// ({"name", "arguments"}) or OpenAI's ({"function": {"name", "arguments"}},
// arguments possibly a JSON string) for tool calls.
type demoFileMessage struct {
	Role      string `json:"role"`
	Content   string `json:"content"`
	ToolCalls []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Function  *struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// LoadDemos reads a JSONL file of demonstrations, one {"messages": [...]}
// (or a bare list of messages) per line. A broken line is an error naming
// the file and line.
func LoadDemos(path string) ([][]tokenizer.Message, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("demonstrations: %w", err)
	}
	defer f.Close()
	var out [][]tokenizer.Message
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var rec struct {
			Messages []demoFileMessage `json:"messages"`
		}
		if b[0] == '[' {
			err = json.Unmarshal(b, &rec.Messages)
		} else {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, line, err)
		}
		if len(rec.Messages) == 0 {
			return nil, fmt.Errorf("%s line %d: no messages", path, line)
		}
		var msgs []tokenizer.Message
		for i, m := range rec.Messages {
			switch m.Role {
			case "system", "user", "assistant", "tool":
			default:
				return nil, fmt.Errorf("%s line %d message %d: role %q (want system, user, assistant or tool)", path, line, i+1, m.Role)
			}
			msg := tokenizer.Message{Role: m.Role, Content: m.Content}
			for _, tc := range m.ToolCalls {
				name, args := tc.Name, tc.Arguments
				if tc.Function != nil {
					name, args = tc.Function.Name, tc.Function.Arguments
				}
				if len(args) > 0 && args[0] == '"' { // OpenAI: arguments as a JSON string
					var s string
					if err := json.Unmarshal(args, &s); err == nil {
						args = json.RawMessage(s)
					}
				}
				if name == "" {
					return nil, fmt.Errorf("%s line %d message %d: a tool call has no name", path, line, i+1)
				}
				msg.ToolCalls = append(msg.ToolCalls, tokenizer.ToolCall{Name: name, Arguments: args})
			}
			msgs = append(msgs, msg)
		}
		out = append(out, msgs)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// renderDemos turns conversations into token sequences whose mask is 1 on
// the assistant's tokens only, each generated turn's tokens as an episode
// has them (ChatFormat.RenderEpisode), so that the policy imitates turns
// it can sample. A demonstration with a piece the tokenizer lacks (a
// word-level tokenizer encodes it as its unknown token) is an error
// naming it.
func renderDemos(cf *tokenizer.ChatFormat, demos [][]tokenizer.Message, tools []json.RawMessage, maxTokens int) ([]*trajectory.Trajectory, int, error) {
	var out []*trajectory.Trajectory
	dropped := 0
	unk, hasUnk := cf.Tokenizer().TokenID(tokenizer.UnknownToken)
	for i, msgs := range demos {
		ids, mask, err := cf.RenderEpisode(msgs, tools)
		if err != nil {
			return nil, 0, fmt.Errorf("demonstration %d: %w", i+1, err)
		}
		if k := slices.Index(ids, unk); hasUnk && k >= 0 {
			return nil, 0, fmt.Errorf("demonstration %d: the text after %q is not in the tokenizer's vocabulary (it encodes as %s): "+
				"the warm start would teach the model to write %s", i+1, cf.Tokenizer().Decode(ids[max(0, k-8):k], false), tokenizer.UnknownToken, tokenizer.UnknownToken)
		}
		if maxTokens > 0 && len(ids) > maxTokens {
			dropped++
			continue
		}
		out = append(out, &trajectory.Trajectory{ID: fmt.Sprintf("demo-%d", i), Tokens: ids, Mask: mask})
	}
	return out, dropped, nil
}
