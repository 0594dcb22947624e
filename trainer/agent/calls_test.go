package agent

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
	"github.com/agentrl/agentrl/toolcall"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/config"
)

// An agent on a Llama 3 tokenizer reads its episodes' turns in Llama 3's
// call syntax: the bare JSON call runs the tool. On the word-level
// tokenizers (Qwen's layout) it stays Hermes.
func TestAgentReadsItsFormatsCalls(t *testing.T) {
	dir := tokenizertest.LlamaDir(t, "What is 6 times 7?")
	cfg := config.Default()
	cfg.Tools.Enabled = []string{"calculator"}
	a, err := New(context.Background(), Spec{Config: cfg, TokenizerDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Env.Calls != toolcall.LlamaJSON {
		t.Fatalf("%s agent: env call syntax %v, want %v", a.Format.Family(), a.Env.Calls, toolcall.LlamaJSON)
	}
	s, err := a.Episode(envs.Task{ID: "t", Question: "What is 6 times 7?", Answers: []string{"42"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Env.Step(context.Background(), envs.Action{Text: `{"name": "calculator", "parameters": {"expression": "6 * 7"}}<|eot_id|>`, Tokens: 20, TotalTokens: 100})
	if err != nil || res.Done || len(res.Responses) != 1 || res.Responses[0] != "42" {
		t.Errorf("step with a Llama call: %+v, %v; want the calculator's 42", res, err)
	}

	w, index := world(t)
	q, err := New(context.Background(), Spec{Config: config.Default(), Index: index, World: w})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if q.Env.Calls != toolcall.Hermes {
		t.Errorf("word-level agent: env call syntax %v, want %v", q.Env.Calls, toolcall.Hermes)
	}
}

// The contexts that render each turn read its calls back as Hermes
// blocks: a Llama 3 agent refuses them by name, and keeps append.
func TestLlamaAgentRefusesRenderedContexts(t *testing.T) {
	dir := tokenizertest.LlamaDir(t, "What is 6 times 7?")
	for _, mode := range []string{"template", "window", "summary"} {
		cfg := config.Default()
		cfg.Tools.Enabled = []string{"calculator"}
		cfg.Env.Context = mode
		_, err := New(context.Background(), Spec{Config: cfg, TokenizerDir: dir})
		if err == nil || !strings.Contains(err.Error(), "env.context: "+mode) || !strings.Contains(err.Error(), "llama3-json") {
			t.Errorf("env.context %s on a Llama 3 agent: %v, want a refusal naming both", mode, err)
		}
	}
	cfg := config.Default()
	cfg.Tools.Enabled = []string{"calculator"}
	cfg.Env.Context = "append"
	a, err := New(context.Background(), Spec{Config: cfg, TokenizerDir: dir})
	if err != nil {
		t.Fatalf("env.context append on a Llama 3 agent: %v", err)
	}
	a.Close()
}

// The synthetic world's agent for a qwen3_5 tiny model builds its
// word-level tokenizer with Qwen3.5's template: the format is Qwen3.5's,
// the env reads XML calls (a Hermes block is an error observation, not a
// call), the demonstrations' XML calls encode without unknown pieces, and
// the tiny model's config is transformers' qwen3_5_text with the layer
// types Qwen3_5TextConfig derives from the interval (layer i full when
// i+1 is a multiple of it).
func TestQwen35TinyAgentWritesXMLCalls(t *testing.T) {
	w, index := world(t)
	cfg := config.Default()
	cfg.Model.Tiny.ModelType = "qwen3_5"
	a, err := New(context.Background(), Spec{Config: cfg, Index: index, World: w})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Format.Family() != tokenizer.Qwen35 || a.Env.Calls != toolcall.QwenXML {
		t.Fatalf("qwen3_5 tiny agent: format %s, env call syntax %v; want qwen3.5 and %v", a.Format.Family(), a.Env.Calls, toolcall.QwenXML)
	}
	task := w.Train[0]
	msgs, err := Demonstration(context.Background(), w, task, a.Tools, false)
	if err != nil {
		t.Fatal(err)
	}
	text, err := a.Format.RenderText(msgs, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "<function=search>\n<parameter=query>\n") || strings.Contains(text, `{"name": "search"`) {
		t.Fatalf("demonstration not in XML calls:\n%s", text)
	}
	unk, _ := a.Tokenizer.TokenID(tokenizer.UnknownToken)
	if ids := a.Tokenizer.Encode(text); slices.Contains(ids, unk) {
		t.Errorf("the demonstration has unknown pieces")
	}
	query := "<tool_call>\n<function=search>\n<parameter=query>\n" + task.Question + "\n</parameter>\n</function>\n</tool_call>"
	for _, c := range []struct {
		text string
		call bool
	}{{query, true}, {`<tool_call>` + "\n" + `{"name": "search", "arguments": {"query": "x"}}` + "\n</tool_call>", false}} {
		s, err := a.Episode(task)
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.Env.Step(context.Background(), envs.Action{Text: c.text, Tokens: 20, TotalTokens: 100})
		if err != nil || res.Done || len(res.Responses) != 1 {
			t.Fatalf("step with %q: %+v, %v", c.text, res, err)
		}
		if got := !strings.HasPrefix(res.Responses[0], "Error"); got != c.call {
			t.Errorf("step with %q: response %q; a search ran: %v, want %v", c.text, res.Responses[0], got, c.call)
		}
	}
	tc := TinyConfig(cfg.Model.Tiny, a.Tokenizer)
	want := []string{torch.LinearAttention, torch.FullAttention} // the default 2 layers, interval 2
	if tc.ModelType != "qwen3_5_text" || !slices.Equal(tc.LayerTypes, want) || tc.HeadDim != 32 || tc.RotaryDim() != 8 ||
		tc.LinearKeyHeads != 2 || tc.LinearValueHeads != 4 || tc.LinearKeyDim != 32 || tc.LinearValueDim != 32 || tc.LinearConvKernel != 4 {
		t.Errorf("tiny config %+v", tc)
	}
	if err := tc.Validate(); err != nil {
		t.Errorf("tiny config: %v", err)
	}
	cfg.Model.Tiny.Layers, cfg.Model.Tiny.FullAttentionInterval = 8, 4
	tc = TinyConfig(cfg.Model.Tiny, a.Tokenizer)
	l, f := torch.LinearAttention, torch.FullAttention
	if want := []string{l, l, l, f, l, l, l, f}; !slices.Equal(tc.LayerTypes, want) {
		t.Errorf("8 layers, interval 4: layer types %v, want %v", tc.LayerTypes, want)
	}
}

// model.chat's keys reach the chat format: on Qwen3.8's template
// reasoning_effort low writes its instruction at the head of the system
// turn, and preserve_thinking false drops the reasoning of a turn before
// the last question; a template without the switches (the word-level
// tokenizer's Qwen3) refuses them, naming the keys.
func TestAgentChatOptions(t *testing.T) {
	dir := tokenizertest.Qwen38Dir(t, "What is 6 times 7?")
	cfg := config.Default()
	cfg.Tools.Enabled = []string{"calculator"}
	cfg.Model.Chat.ReasoningEffort, cfg.Model.Chat.PreserveThinking = "low", false
	a, err := New(context.Background(), Spec{Config: cfg, TokenizerDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Format.Family() != tokenizer.Qwen38 || a.Env.Calls != toolcall.QwenXML {
		t.Fatalf("format %s, env call syntax %v; want qwen3.8 and %v", a.Format.Family(), a.Env.Calls, toolcall.QwenXML)
	}
	text, err := a.Format.RenderText([]tokenizer.Message{{Role: "user", Content: "a"}, {Role: "assistant", Content: "old</think>b"},
		{Role: "user", Content: "c"}}, nil, true)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>system\nReasoning effort is set to low. Keep your thinking brief and focused, moving directly to the conclusion " +
		"without unnecessary elaboration.<|im_end|>\n<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n" +
		"<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n<think>\n"
	if text != want {
		t.Errorf("rendered\n%q\nwant\n%q", text, want)
	}

	w, index := world(t)
	for _, chat := range []config.ChatConfig{{ReasoningEffort: "low", PreserveThinking: true}, {PreserveThinking: false}} {
		cfg := config.Default()
		cfg.Model.Chat = chat
		_, err := New(context.Background(), Spec{Config: cfg, Index: index, World: w})
		if err == nil || !strings.Contains(err.Error(), "model.chat") || !strings.Contains(err.Error(), "not part of this template") {
			t.Errorf("model.chat %+v on a Qwen3 agent: %v, want a refusal naming model.chat", chat, err)
		}
	}
}

// An agent on a Gemma 4 tokenizer reads its episodes' turns in Gemma 4's
// call syntax (the call runs the tool, after a thought channel that
// mentions the tags) and renders its prompt with the tools declared.
func TestGemma4AgentReadsItsCalls(t *testing.T) {
	dir := tokenizertest.Gemma4Dir(t, "What is 6 times 7?")
	cfg := config.Default()
	cfg.Tools.Enabled = []string{"calculator"}
	a, err := New(context.Background(), Spec{Config: cfg, TokenizerDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Format.Family() != tokenizer.Gemma4 || a.Env.Calls != toolcall.Gemma4 {
		t.Fatalf("format %s, env call syntax %v; want gemma4 and %v", a.Format.Family(), a.Env.Calls, toolcall.Gemma4)
	}
	s, err := a.Episode(envs.Task{ID: "t", Question: "What is 6 times 7?", Answers: []string{"42"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Chat.Prompt(s.System, s.User, s.Tools); err != nil {
		t.Fatalf("prompt: %v", err)
	}
	q := toolcall.Gemma4Quote
	turn := "<|channel>thought\nI write <|tool_call> now.<channel|>" + toolcall.Gemma4ToolCall("calculator", "expression:"+q+"6 * 7"+q) + toolcall.Gemma4ResponseOpen
	res, err := s.Env.Step(context.Background(), envs.Action{Text: turn, Tokens: 20, TotalTokens: 100})
	if err != nil || res.Done || len(res.Responses) != 1 || res.Responses[0] != "42" || res.Calls[0].Name != "calculator" {
		t.Errorf("step with a Gemma 4 call: %+v, %v; want the calculator's 42", res, err)
	}
}
