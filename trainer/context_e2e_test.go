package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/gateway/openai"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/toolcall"
	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
)

// A thinking-mode, Qwen3-shaped tiny model (q/k norms; the Qwen3 chat
// layout with thinking on) trained on the synthetic world for 3 iterations
// with env.context template. Every stored segment of every episode,
// training and evaluation, shows exactly what the chat template renders
// for the conversation before each of its turns, and `trainer serve`
// (the gateway's reading of the same conversation as OpenAI messages)
// renders the same tokens; the segments of an episode share its reward.
// The update trains the segments packed (algorithm.pack_segments, on by
// default): its metrics count each distinct prefix of an episode's
// segments once (update_tokens) against the segments' own tokens
// (update_tokens_unpacked).
func TestQwen3TemplateContextEndToEnd(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(dir)
	cfg.Model.Tiny.ModelType = "qwen3"
	cfg.Env.Context = "template"
	cfg.Run.Iterations = 3
	cfg.Run.EvalEvery = 3
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	format, schemas := tr.agent.Format, tr.agent.Schemas
	if c, ok := tr.agent.Chat.(rollout.ContextChat); !ok || c.Context().Mode != rollout.ContextTemplate {
		t.Fatalf("the agent's chat does not render the template context")
	}
	if _, err := tr.Run(context.Background(), nil); err != nil {
		tr.Close()
		t.Fatal(err)
	}
	storePath := tr.StorePath()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := store.Open(storePath)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ms, err := s.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	metrics := map[int]map[string]float64{}
	for _, m := range ms {
		metrics[m.Iteration] = m.Metrics
	}
	shown, packedFewer := false, false
	for iter := 0; iter <= 3; iter++ {
		trs, err := s.LoadIteration(iter, "")
		if err != nil {
			t.Fatal(err)
		}
		eps := map[string][]*trajectory.Trajectory{}
		for _, x := range trs {
			base, _, _ := strings.Cut(x.ID, ".") // segments "<id>.<k>"
			eps[base] = append(eps[base], x)
		}
		counts := map[trajectory.Split][6]int{} // episodes, segments, split episodes, turns, contexts checked, of them by serve
		naive, packed := 0, 0                   // the training segments' tokens, and their distinct prefixes
		reward := map[trajectory.Split]float64{}
		for id, segs := range eps {
			if strings.Contains(id, "-eval-rag") {
				continue // the naive-RAG baseline: one turn on its own prompt
			}
			sort.Slice(segs, func(a, b int) bool { return len(segs[a].ID) < len(segs[b].ID) || segs[a].ID < segs[b].ID })
			checked, served := checkEpisodeContexts(t, format, schemas, id, segs)
			c := counts[segs[0].Split]
			c[4] += checked
			c[5] += served
			reward[segs[0].Split] += segs[0].Reward
			if len(segs) > 1 && !shown {
				shown = true
				t.Logf("%s: segment 0 and segment 1's context first differ at token %d: %s", id, firstDiff(segs[0].Tokens, segs[1].Tokens),
					showDiff(format.Tokenizer(), segs[0].Tokens, segs[1].Tokens))
			}
			c[0]++
			c[1] += len(segs)
			if len(segs) > 1 {
				c[2]++
			}
			for _, x := range segs {
				c[3] += len(x.Turns)
			}
			counts[segs[0].Split] = c
			if segs[0].Split == trajectory.Train {
				prefixes := map[string]bool{}
				for _, x := range segs {
					naive += len(x.Tokens)
					for k := range x.Tokens {
						prefixes[fmt.Sprint(x.Tokens[:k+1])] = true
					}
				}
				packed += len(prefixes)
			}
		}
		if iter > 0 {
			m := metrics[iter]
			if m[metric.UpdateTokensNaive] != float64(naive) || m[metric.UpdateTokens] != float64(packed) {
				t.Errorf("iteration %d: update_tokens %v of update_tokens_unpacked %v, want the distinct prefixes %d of the segments' %d tokens",
					iter, m[metric.UpdateTokens], m[metric.UpdateTokensNaive], packed, naive)
			}
			packedFewer = packedFewer || packed < naive
			t.Logf("iteration %d: the update ran %d tokens packed for %d as samples", iter, packed, naive)
		}
		for split, c := range counts {
			t.Logf("iteration %d %s: %d episodes, mean reward %.3f, %d turns, %d segments, %d episodes split; %d contexts equal the template's, %d of them serve's too",
				iter, split, c[0], reward[split]/float64(c[0]), c[3], c[1], c[2], c[4], c[5])
		}
	}
	if !packedFewer {
		t.Errorf("no training episode was split, so packing saved nothing: the check proves nothing")
	}
}

// checkEpisodeContexts rebuilds an episode's conversation from its stored
// turns and checks that the tokens before each turn are the template's
// rendering of the conversation so far, both as the rollout builds the
// messages and as the gateway reads them from an OpenAI request; it says
// how many contexts it checked and how many of them against the gateway.
func checkEpisodeContexts(t *testing.T, f *tokenizer.ChatFormat, schemas []json.RawMessage, id string, segs []*trajectory.Trajectory) (checked, served int) {
	t.Helper()
	var conv []rollout.ConvTurn
	for k, x := range segs {
		if x.Reward != segs[0].Reward || x.Stop != segs[0].Stop {
			t.Fatalf("%s: segment %d has reward %v (%s), the first %v (%s)", id, k, x.Reward, x.Stop, segs[0].Reward, segs[0].Stop)
		}
		for j, turn := range x.Turns {
			start := slices.Index(x.TurnOf, int16(j))
			if start < 0 {
				t.Fatalf("%s: segment %d has no token of turn %d", id, k, j)
			}
			if j == 0 && start != x.PromptLen {
				t.Fatalf("%s: segment %d's first turn starts at %d, its prompt is %d tokens", id, k, start, x.PromptLen)
			}
			msgs := rollout.Context{Mode: rollout.ContextTemplate}.Messages(toolcall.SystemPrompt, x.Question, conv)
			want, _, err := f.Render(msgs, schemas, true)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(x.Tokens[:start], want) {
				t.Fatalf("%s: segment %d before turn %d holds\n%q\nthe template renders\n%q", id, k, j,
					f.Tokenizer().Decode(x.Tokens[:start], false), f.Tokenizer().Decode(want, false))
			}
			checked++
			// A tool message answering a turn whose calls did not parse (an
			// error shown to the model) is no OpenAI conversation: serve
			// is asked only for the others.
			if sendable(msgs) {
				served++
				if ids := serveRender(t, f, schemas, msgs); !slices.Equal(ids, want) {
					t.Fatalf("%s: serve renders the conversation before turn %d as\n%q\nthe rollout as\n%q", id, len(conv),
						f.Tokenizer().Decode(ids, false), f.Tokenizer().Decode(want, false))
				}
			}
			text := turn.Text
			for _, end := range []string{toolcall.TurnEnd, toolcall.EndOfText} {
				text = strings.TrimSuffix(text, end)
			}
			var resp []string
			for _, c := range turn.Calls {
				resp = append(resp, c.Result)
			}
			conv = append(conv, rollout.ConvTurn{Text: text, Responses: resp})
		}
	}
	return checked, served
}

// sendable reports whether every tool message of msgs answers a tool call
// of the assistant message before it, as the OpenAI API requires.
func sendable(msgs []tokenizer.Message) bool {
	calls := 0
	for _, m := range msgs {
		switch m.Role {
		case "assistant":
			calls = len(m.ToolCalls)
		case "tool":
			if calls == 0 {
				return false
			}
			calls--
		}
	}
	return true
}

// serveRender is what `trainer serve` renders for msgs sent as a client
// sends them: OpenAI messages (assistant tool calls with their arguments
// as text, each answered by a tool message), parsed and read by the gateway.
func serveRender(t *testing.T, f *tokenizer.ChatFormat, schemas []json.RawMessage, msgs []tokenizer.Message) []int32 {
	t.Helper()
	var out []map[string]any
	calls := 0
	for _, m := range msgs {
		o := map[string]any{"role": m.Role, "content": m.Content}
		if m.Role == "tool" {
			o["tool_call_id"] = fmt.Sprintf("call_%d", calls)
		}
		if len(m.ToolCalls) > 0 {
			var tc []map[string]any
			for _, c := range m.ToolCalls {
				var args string
				if err := json.Unmarshal(c.Arguments, &args); err != nil {
					t.Fatal(err)
				}
				calls++
				tc = append(tc, map[string]any{"id": fmt.Sprintf("call_%d", calls), "type": "function",
					"function": map[string]any{"name": c.Name, "arguments": args}})
			}
			o["tool_calls"] = tc
			if m.Content == "" {
				o["content"] = nil
			}
		}
		out = append(out, o)
	}
	req := map[string]any{"model": "m", "messages": out}
	var tools []map[string]any
	for _, s := range schemas {
		tools = append(tools, map[string]any{"type": "function", "function": s})
	}
	if tools != nil {
		req["tools"] = tools
	}
	body, _ := json.Marshal(req)
	r, e := openai.ParseRequest(body, 1<<20)
	if e != nil {
		t.Fatalf("the gateway refuses the conversation: %v\n%s", e, body)
	}
	ids, _, err := f.Render(gateway.ChatMessages(r, f.CallSyntax()), r.Tools, true)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// firstDiff is the first index where a and b differ.
func firstDiff(a, b []int32) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// showDiff shows a few tokens of a and of b from where they first differ.
func showDiff(tok *tokenizer.Tokenizer, a, b []int32) string {
	i := firstDiff(a, b)
	return fmt.Sprintf("%q then %q", tok.Decode(a[i:min(i+8, len(a))], false), tok.Decode(b[i:min(i+8, len(b))], false))
}
