package warmstart

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/synth"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trainer/agent"
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
