package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/internal/pyinterop"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
	"github.com/agentrl/agentrl/toolcall"
	"github.com/agentrl/agentrl/trajectory"
)

// echoTool answers a call with its "text" argument.
type echoTool struct{ name string }

func (e echoTool) Name() string        { return e.name }
func (e echoTool) Description() string { return "Repeats the text." }
func (e echoTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"what to repeat"}},"required":["text"]}`)
}
func (e echoTool) Call(_ context.Context, args json.RawMessage) (envs.Result, error) {
	var a struct{ Text string }
	if err := json.Unmarshal(args, &a); err != nil {
		return envs.Result{}, err
	}
	return envs.Result{Content: a.Text + " (" + e.name + ")", OK: true}, nil
}

// queueDecoder is a one-slot stand-in policy that samples the tokens of
// its queue in order, whatever was prefilled.
type queueDecoder struct {
	t     *testing.T
	queue []int32
}

func (d *queueDecoder) Slots() int                          { return 1 }
func (d *queueDecoder) MaxLen() int                         { return 4096 }
func (d *queueDecoder) Prefill(int, []int64) error          { return nil }
func (d *queueDecoder) CopySlot(int, int) error             { return nil }
func (d *queueDecoder) Release(int) error                   { return nil }
func (d *queueDecoder) Seed(int, uint64) error              { return nil }
func (d *queueDecoder) PrefillBatch([]int, [][]int64) error { return nil }
func (d *queueDecoder) Step(slots []int, _ decoding.Sampling, toks []int64, lps []float32) error {
	if len(d.queue) == 0 {
		d.t.Fatalf("the policy decodes past its script")
	}
	toks[0], lps[0] = int64(d.queue[0]), -0.5
	d.queue = d.queue[1:]
	return nil
}

// A Gemma 4 episode run by the rollout over a ToolEnv: a turn with two
// calls to different tools, a turn with one, then the answer. Each
// observation names its responses after the calls they answer, so the
// trajectory's tokens are those of the conversation as Gemma 4's chat
// format renders it (and, with $AGENTRL_PYTHON set, as transformers'
// apply_chat_template renders it, less the "\n" after the last <turn|>,
// which no model generates), and the action mask covers exactly the
// policy's tokens: the calls with the <|tool_response> that hands the turn
// over, and the answer with its <turn|>. The same holds when the
// conversation is rendered again before each turn (env.context template),
// and with thinking on, where each turn reasons in a thought channel (that
// the observation opens after tool responses, mask 0).
func TestInteropGemma4Episode(t *testing.T) {
	for _, thinking := range []bool{false, true} {
		t.Run(fmt.Sprintf("thinking=%v", thinking), func(t *testing.T) { checkGemma4Episode(t, thinking) })
	}
}

func checkGemma4Episode(t *testing.T, thinking bool) {
	q := toolcall.Gemma4Quote
	system, question := "Answer with <answer></answer>.", "Where is the Eiffel Tower?"
	tools := []envs.Tool{echoTool{"search"}, echoTool{"lookup"}}
	schemas, err := envs.Schemas(tools)
	if err != nil {
		t.Fatal(err)
	}
	turns := []string{
		toolcall.Gemma4ToolCall("search", "text:"+q+"Eiffel Tower"+q) + toolcall.Gemma4ToolCall("lookup", "text:"+q+"Paris"+q) + toolcall.Gemma4ResponseOpen,
		toolcall.Gemma4ToolCall("lookup", "text:"+q+"France"+q) + toolcall.Gemma4ResponseOpen,
		"<answer>Paris</answer>" + toolcall.Gemma4TurnEnd,
	}
	// The messages' contents: with thinking, each turn's thought channel
	// (the first opened by the model, the others by the observation).
	contents := []string{"", "", "<answer>Paris</answer>"}
	if thinking {
		for i, r := range []string{"I need <|tool_call> twice.", "One more.", "Done."} {
			thought := r + "\n" + toolcall.Gemma4ChannelClose
			if i == 0 {
				turns[i] = toolcall.Gemma4ChannelOpen + "thought\n" + thought + turns[i]
			} else {
				turns[i] = thought + turns[i]
			}
			contents[i] = toolcall.Gemma4ChannelOpen + "thought\n" + thought + contents[i]
		}
	}
	call := func(name, text string) tokenizer.ToolCall {
		args, _ := json.Marshal(map[string]string{"text": text})
		return tokenizer.ToolCall{Name: name, Arguments: args}
	}
	msgs := []tokenizer.Message{{Role: "system", Content: system}, {Role: "user", Content: question},
		{Role: "assistant", Content: contents[0], ToolCalls: []tokenizer.ToolCall{call("search", "Eiffel Tower"), call("lookup", "Paris")}},
		{Role: "tool", Content: "Eiffel Tower (search)"}, {Role: "tool", Content: "Paris (lookup)"},
		{Role: "assistant", Content: contents[1], ToolCalls: []tokenizer.ToolCall{call("lookup", "France")}}, {Role: "tool", Content: "France (lookup)"},
		{Role: "assistant", Content: contents[2]}}
	opts := tokenizer.ChatOptions{Thinking: thinking}
	base, err := tokenizertest.Gemma4Format(t).WithOptions(opts)
	if err != nil {
		t.Fatal(err)
	}
	text, err := base.RenderText(msgs, schemas, false)
	if err != nil {
		t.Fatal(err)
	}
	dir := tokenizertest.Gemma4Dir(t, text)
	f, err := tokenizer.NewChatFormat(mustLoad(t, dir))
	if err == nil {
		f, err = f.WithOptions(opts)
	}
	if err != nil {
		t.Fatal(err)
	}
	tok := f.Tokenizer()
	var queue []int32
	for _, turn := range turns {
		ids := tok.Encode(turn)
		if tok.Decode(ids, false) != turn {
			t.Fatalf("the test tokenizer does not spell %q", turn)
		}
		queue = append(queue, ids...)
	}
	task := envs.Task{ID: "g4", Question: question, Answers: []string{"Paris"}}
	cfg := envs.DefaultEnvConfig()
	cfg.Calls = f.CallSyntax()
	factory := func(task envs.Task) (Setup, error) {
		env, err := envs.NewToolEnv(task, tools, cfg)
		return Setup{System: system, User: task.Question, Tools: schemas, Env: env}, err
	}
	want, wantMask, err := f.Render(msgs, schemas, false)
	if err != nil {
		t.Fatal(err)
	}
	if nl := tok.Encode("\n"); !slices.Equal(want[len(want)-len(nl):], nl) {
		t.Fatalf("the rendering does not end with a newline: %q", tok.Decode(want, false))
	}
	want, wantMask = want[:len(want)-1], wantMask[:len(wantMask)-1]
	var tr *trajectory.Trajectory
	// Appended observations, and the conversation rendered again before
	// each turn (the calls read back with toolcall.Split), give the same
	// sequence.
	for _, mode := range []ContextMode{ContextAppend, ContextTemplate} {
		chat := NewChat(f).WithContext(Context{Mode: mode})
		trs, _, err := Run(context.Background(), &queueDecoder{t: t, queue: slices.Clone(queue)}, chat, factory,
			[]Request{{Task: task, Samples: 1}}, Options{MaxTurnTokens: 200, MaxTotalTokens: 4000})
		if err != nil {
			t.Fatal(err)
		}
		tr = trs[0]
		if tr.Stop != trajectory.StopAnswer || tr.Answer != "Paris" || len(tr.Turns) != 3 || len(trs) != 1 {
			t.Fatalf("%s, thinking %v: stop %s (%s), answer %q, %d turns, %d segments; want the answer Paris after 3 turns in one segment",
				mode, thinking, tr.Stop, tr.Error, tr.Answer, len(tr.Turns), len(trs))
		}
		if !slices.Equal(tr.Tokens, want) {
			t.Fatalf("%s, thinking %v: episode\n got %q\nwant %q", mode, thinking, tok.Decode(tr.Tokens, false), tok.Decode(want, false))
		}
		if !slices.Equal(tr.Mask, wantMask) {
			t.Errorf("%s, thinking %v: mask\n got %v\nwant %v", mode, thinking, tr.Mask, wantMask)
		}
		var gen []string
		for i := 0; i < len(tr.Mask); {
			if tr.Mask[i] == 0 {
				i++
				continue
			}
			j := i
			for j < len(tr.Mask) && tr.Mask[j] == 1 {
				j++
			}
			gen = append(gen, tok.Decode(tr.Tokens[i:j], false))
			i = j
		}
		if !slices.Equal(gen, turns) {
			t.Errorf("%s, thinking %v: the mask's runs are\n%q\nwant the policy's turns\n%q", mode, thinking, gen, turns)
		}
	}

	// transformers' rendering of the same conversation, each tool message
	// answering its call by id, as an OpenAI client sends it.
	var py []map[string]any
	for _, m := range msgs {
		pm := map[string]any{"role": m.Role, "content": m.Content}
		var calls []map[string]any
		for _, c := range m.ToolCalls {
			calls = append(calls, map[string]any{"type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		if calls != nil {
			pm["tool_calls"] = calls
		}
		py = append(py, pm)
	}
	var ref []struct {
		IDs   []int32 `json:"ids"`
		Error string  `json:"error"`
	}
	pyinterop.Run(t, "../../tokenizer/testdata/interop/chat_template.py", map[string]any{"dir": dir, "call_ids": true,
		"cases": []map[string]any{{"messages": py, "tools": schemas, "gen": false, "kwargs": map[string]any{"enable_thinking": thinking}}}}, &ref)
	if len(ref) != 1 || ref[0].Error != "" {
		t.Fatalf("transformers: %+v", ref)
	}
	if got := ref[0].IDs; !slices.Equal(got[:len(got)-1], tr.Tokens) {
		t.Errorf("thinking %v: episode\n got %q\ntransformers %q", thinking, tok.Decode(tr.Tokens, false), tok.Decode(got, false))
	}
}

// A Gemma 4 observation names each response after the call it answers; a
// parse error's response answers none and is named as the template names
// a response beyond the calls, "unknown".
func TestGemma4ObservationNames(t *testing.T) {
	f := tokenizertest.Gemma4Format(t, "response:search{value:", "response:unknown{value:", "Error", "found", "}")
	chat := NewChat(f)
	res := envs.StepResult{Calls: []trajectory.ToolCall{{Name: "search"}}, Responses: []string{"found"}}
	if got := f.Tokenizer().Decode(chat.Observation(callNames(res), res.Responses, true), false); got != "response:search{value:<|\"|>found<|\"|>}<tool_response|>" {
		t.Errorf("observation %q", got)
	}
	res = envs.StepResult{Calls: []trajectory.ToolCall{{ParseError: "bad", Name: "search"}}, Responses: []string{"Error"}}
	if got := f.Tokenizer().Decode(chat.Observation(callNames(res), res.Responses, true), false); got != "response:unknown{value:<|\"|>Error<|\"|>}<tool_response|>" {
		t.Errorf("a parse error's observation %q", got)
	}
}

// mustLoad loads the tokenizer folder dir.
func mustLoad(t *testing.T, dir string) *tokenizer.Tokenizer {
	t.Helper()
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
