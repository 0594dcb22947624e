package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
)

// renderChat is fakeChat with a template: a user message "task k" is
// [10, 100+k], a summary (a user message "Summary...") is [40, 40+n] for
// n summarised calls or turns, an assistant message is its words then the
// closing <|im_end|>, and the tool messages after it are [20, 30, 31, ...]
// as Observation lays them out. With dropReasoning it rewrites history as
// Qwen3's drops earlier reasoning: an assistant message other than the
// latest keeps only its last word ("reasoning" being the words before it).
type renderChat struct {
	fakeChat
	ctx           Context
	dropReasoning bool
	renders       int
}

func (c *renderChat) Context() Context { return c.ctx }

func (c *renderChat) Render(msgs []tokenizer.Message, _ []json.RawMessage) ([]int32, error) {
	c.renders++
	lastAsst := -1
	for i, m := range msgs {
		if m.Role == "assistant" {
			lastAsst = i
		}
	}
	var out []int32
	resp := 0
	for i, m := range msgs {
		switch m.Role {
		case "user":
			var k int
			if strings.HasPrefix(m.Content, "Summary") {
				out = append(out, 40, int32(40+strings.Count(m.Content, "\n- ")))
			} else if _, err := fmt.Sscanf(m.Content, "task %d", &k); err == nil {
				out = append(out, tokPrompt, int32(100+k))
			} else {
				return nil, fmt.Errorf("unexpected user message %q", m.Content)
			}
		case "assistant":
			resp = 0
			words := c.encode(m.Content)
			if c.dropReasoning && i != lastAsst && len(words) > 1 {
				n := len(words) - 1 // keep the last word and a closing </tool_call>
				if words[n] == tokToolEnd && n > 0 {
					n--
				}
				words = words[n:]
			}
			out = append(append(out, words...), tokImEnd)
		case "tool":
			if resp == 0 {
				out = append(out, tokObs)
			}
			out = append(out, int32(30+resp))
			resp++
		default:
			return nil, fmt.Errorf("unexpected role %q", m.Role)
		}
	}
	return out, nil
}

// encode reads fakeChat.Decode's text back to ids.
func (c *renderChat) encode(text string) []int32 {
	var out []int32
	text = strings.ReplaceAll(text, "</tool_call>", " </tool_call> ")
	for _, w := range strings.Fields(text) {
		var id int32
		switch {
		case w == "</tool_call>":
			id = tokToolEnd
		case w == "<|im_end|>":
			id = tokImEnd
		default:
			fmt.Sscanf(w, "w%d", &id)
		}
		out = append(out, id)
	}
	return out
}

// turnDecoder plays task k's script (see script) counting turns itself, so
// that it follows an episode through contexts that drop turns; it records
// every context prefilled into an empty slot.
type turnDecoder struct {
	scriptedDecoder
	turns    []int
	contexts [][]int32
}

func newTurnDecoder(t *testing.T, slots int) *turnDecoder {
	return &turnDecoder{scriptedDecoder: *newScripted(t, slots), turns: make([]int, slots)}
}

func (d *turnDecoder) Prefill(slot int, ids []int64) error {
	if len(d.hist[slot]) == 0 {
		ctx := make([]int32, len(ids))
		for i, v := range ids {
			ctx[i] = int32(v)
		}
		d.contexts = append(d.contexts, ctx)
		if len(ids) == 2 { // an episode's prompt
			d.turns[slot] = 0
		}
	}
	for _, v := range ids {
		d.hist[slot] = append(d.hist[slot], int32(v))
	}
	return nil
}

func (d *turnDecoder) PrefillBatch(slots []int, ids [][]int64) error {
	return prefillEach(d.t, &d.batches, d.Prefill, slots, ids)
}

func (d *turnDecoder) CopySlot(src, dst int) error {
	d.turns[dst] = d.turns[src]
	return d.scriptedDecoder.CopySlot(src, dst)
}

func (d *turnDecoder) Step(slots []int, _ decoding.Sampling, toks []int64, lps []float32) error {
	for i, sl := range slots {
		h := d.hist[sl]
		k := int(h[1] - 100)
		pos := 0
		for j := len(h) - 1; j >= 0 && h[j] >= 200; j-- {
			pos++
		}
		sc := script(k, d.turns[sl])
		v := sc[pos]
		if pos == len(sc)-1 {
			d.turns[sl]++
		}
		toks[i], lps[i] = int64(v), -0.01*float32(v)
		d.hist[sl] = append(h, v)
	}
	return nil
}

// seg is a segment written out: its tokens, action mask and turn indices.
type seg struct {
	tokens []int32
	mask   []uint8
	turnOf []int16
}

// build lays out a segment from its prompt (mask 0, turn -1) and its
// turns, each the generated ids (mask 1) and the observation after it
// (mask 0), both of the turn.
func build(prompt []int32, turns ...[2][]int32) seg {
	s := seg{tokens: append([]int32(nil), prompt...)}
	for range prompt {
		s.mask = append(s.mask, 0)
		s.turnOf = append(s.turnOf, -1)
	}
	for t, tu := range turns {
		for _, v := range tu[0] {
			s.tokens, s.mask, s.turnOf = append(s.tokens, v), append(s.mask, 1), append(s.turnOf, int16(t))
		}
		for _, v := range tu[1] {
			s.tokens, s.mask, s.turnOf = append(s.tokens, v), append(s.mask, 0), append(s.turnOf, int16(t))
		}
	}
	return s
}

func ids(v ...int32) []int32 { return v }

// Each context mode on task 3 (turns 0-2 say their word three times and
// call a tool, turn 3 answers): the segments, masks and turn indices are
// written out by hand from the fake template's rules.
func TestContextModes(t *testing.T) {
	const w0, w1, w2, w3 = 230, 231, 232, 233
	gen := func(w int32) []int32 { return ids(w, w, w, tokToolEnd) }
	obs := ids(tokImEnd, tokObs, 30)
	appendOnly := []seg{build(ids(10, 103), [2][]int32{gen(w0), obs}, [2][]int32{gen(w1), obs}, [2][]int32{gen(w2), obs},
		[2][]int32{ids(w3, tokImEnd), nil})}
	cases := []struct {
		name string
		chat *renderChat
		want []seg
	}{
		{"append", &renderChat{ctx: Context{Mode: ContextAppend}}, appendOnly},
		// A template that does not rewrite renders each context as an
		// extension: one segment, the append sequence.
		{"template that appends", &renderChat{ctx: Context{Mode: ContextTemplate}}, appendOnly},
		// Dropping the reasoning of all but the latest turn: turn 1's
		// context shows turn 0 as "w0 </tool_call>", so turn 1 ends
		// segment 0 and each later turn starts a segment.
		{"template that drops reasoning", &renderChat{ctx: Context{Mode: ContextTemplate}, dropReasoning: true}, []seg{
			build(ids(10, 103), [2][]int32{gen(w0), obs}, [2][]int32{gen(w1), nil}),
			build(ids(10, 103, w0, 2, 1, 20, 30, w1, w1, w1, 2, 1, 20, 30), [2][]int32{gen(w2), nil}),
			build(ids(10, 103, w0, 2, 1, 20, 30, w1, 2, 1, 20, 30, w2, w2, w2, 2, 1, 20, 30), [2][]int32{ids(w3, tokImEnd), nil}),
		}},
		// The last turn only: turn 1's context drops turn 0.
		{"window 1", &renderChat{ctx: Context{Mode: ContextWindow, Turns: 1}}, []seg{
			build(ids(10, 103), [2][]int32{gen(w0), obs}, [2][]int32{gen(w1), nil}),
			build(ids(10, 103, w1, w1, w1, 2, 1, 20, 30), [2][]int32{gen(w2), nil}),
			build(ids(10, 103, w2, w2, w2, 2, 1, 20, 30), [2][]int32{ids(w3, tokImEnd), nil}),
		}},
		// A window of 3 turns never drops one in a 4-turn episode.
		{"window 3", &renderChat{ctx: Context{Mode: ContextWindow, Turns: 3}}, appendOnly},
		// The summary of one, then two, earlier turns before the last turn.
		{"summary 1", &renderChat{ctx: Context{Mode: ContextSummary, Turns: 1}}, []seg{
			build(ids(10, 103), [2][]int32{gen(w0), obs}, [2][]int32{gen(w1), nil}),
			build(ids(10, 103, 40, 41, w1, w1, w1, 2, 1, 20, 30), [2][]int32{gen(w2), nil}),
			build(ids(10, 103, 40, 42, w2, w2, w2, 2, 1, 20, 30), [2][]int32{ids(w3, tokImEnd), nil}),
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dec := newTurnDecoder(t, 2)
			trs, _, err := Run(context.Background(), dec, c.chat, factory(10, 1000, 0), []Request{{Task: task(3), Samples: 1}}, opts())
			if err != nil {
				t.Fatal(err)
			}
			if len(trs) != len(c.want) {
				t.Fatalf("%d segments, want %d", len(trs), len(c.want))
			}
			turns := 0
			for i, tr := range trs {
				w := c.want[i]
				id := "3-train-0-0"
				if i > 0 {
					id += fmt.Sprintf(".%d", i)
				}
				if tr.ID != id || tr.Group != 0 || tr.Sample != 0 {
					t.Errorf("segment %d: id %s group %d sample %d, want %s", i, tr.ID, tr.Group, tr.Sample, id)
				}
				if !reflect.DeepEqual(tr.Tokens, w.tokens) || !reflect.DeepEqual(tr.Mask, w.mask) || !reflect.DeepEqual(tr.TurnOf, w.turnOf) {
					t.Errorf("segment %d:\ntokens %v\nmask   %v\nturn   %v\nwant\ntokens %v\nmask   %v\nturn   %v",
						i, tr.Tokens, tr.Mask, tr.TurnOf, w.tokens, w.mask, w.turnOf)
				}
				if tr.PromptLen != len(dec.contexts[i]) || !reflect.DeepEqual(tr.Tokens[:tr.PromptLen], dec.contexts[i]) {
					t.Errorf("segment %d: prompt %v, the policy was given %v", i, tr.Tokens[:tr.PromptLen], dec.contexts[i])
				}
				for j, v := range tr.Tokens {
					if want := -0.01 * float32(v) * float32(tr.Mask[j]); tr.Logprobs[j] != want {
						t.Fatalf("segment %d token %d: logprob %v want %v", i, j, tr.Logprobs[j], want)
					}
				}
				// Every segment has the episode's ending and reward: outcome 3
				// plus 0.5 for each of the 3 tool turns; and its evidence: one
				// supporting passage of the task's 4 for each tool turn, over
				// all segments.
				if tr.Stop != trajectory.StopAnswer || tr.Outcome != 3 || tr.Reward != 4.5 || tr.Components["em"] != 1 {
					t.Errorf("segment %d: stop %s outcome %v reward %v", i, tr.Stop, tr.Outcome, tr.Reward)
				}
				if tr.Evidence != 3 || tr.Support != 4 {
					t.Errorf("segment %d: evidence %d of %d, want 3 of 4", i, tr.Evidence, tr.Support)
				}
				turns += len(tr.Turns)
			}
			if turns != 4 {
				t.Errorf("%d turn records over the segments, want 4", turns)
			}
			if c.chat.ctx.Mode == ContextAppend && c.chat.renders != 0 {
				t.Errorf("append rendered %d contexts", c.chat.renders)
			}
		})
	}
}

// The messages each mode renders, written out: the question, the turns
// kept, each assistant text with its calls split off as a client of a
// serving engine sends them back, and the tool responses.
func TestContextMessages(t *testing.T) {
	call := func(q string) string {
		return "<think>\nlook up " + q + "\n</think>\n\nsearching\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"query\": \"" + q + "\"}}\n</tool_call>"
	}
	turns := []ConvTurn{{Text: call("a"), Responses: []string{"ra"}}, {Text: call("b"), Responses: []string{"rb"}},
		{Text: "<think>\n\n</think>\n\nno call here"}}
	asst := func(q string) tokenizer.Message {
		return tokenizer.Message{Role: "assistant", Content: "<think>\nlook up " + q + "\n</think>\n\nsearching",
			ToolCalls: []tokenizer.ToolCall{{Name: "search", Arguments: json.RawMessage(`"{\"query\": \"` + q + `\"}"`)}}}
	}
	sys, user := tokenizer.Message{Role: "system", Content: "S"}, tokenizer.Message{Role: "user", Content: "Q"}
	last := tokenizer.Message{Role: "assistant", Content: "<think>\n\n</think>\n\nno call here"}
	tool := func(r string) tokenizer.Message { return tokenizer.Message{Role: "tool", Content: r} }
	summary := tokenizer.Message{Role: "user", Content: "Summary of the earlier turns:\n- search {\"query\": \"a\"}: ra\n- search {\"query\": \"b\"}: rb"}
	cases := []struct {
		ctx  Context
		want []tokenizer.Message
	}{
		{Context{Mode: ContextTemplate}, []tokenizer.Message{sys, user, asst("a"), tool("ra"), asst("b"), tool("rb"), last}},
		{Context{Mode: ContextWindow, Turns: 2}, []tokenizer.Message{sys, user, asst("b"), tool("rb"), last}},
		{Context{Mode: ContextWindow, Turns: 5}, []tokenizer.Message{sys, user, asst("a"), tool("ra"), asst("b"), tool("rb"), last}},
		{Context{Mode: ContextSummary, Turns: 1}, []tokenizer.Message{sys, user, summary, last}},
	}
	for _, c := range cases {
		if got := c.ctx.Messages("S", "Q", turns); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %d:\n%+v\nwant\n%+v", c.ctx.Mode, c.ctx.Turns, got, c.want)
		}
	}
	if got := roles(Context{Mode: ContextTemplate}.Messages("", "Q", nil)); got != "user" {
		t.Errorf("no system text: roles %s, want user", got)
	}
}

func roles(msgs []tokenizer.Message) string {
	var r []string
	for _, m := range msgs {
		r = append(r, m.Role)
	}
	return strings.Join(r, " ")
}

// env.context's values; anything else is refused by name.
func TestParseContextMode(t *testing.T) {
	for _, s := range []string{"", "append", "template", "window", "summary"} {
		if m, err := ParseContextMode(s); err != nil || string(m) != s {
			t.Errorf("%q: %v %v", s, m, err)
		}
	}
	if _, err := ParseContextMode("sliding"); err == nil || !strings.Contains(err.Error(), `env.context: unknown context "sliding"`) {
		t.Errorf("sliding: %v", err)
	}
}
