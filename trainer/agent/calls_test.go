package agent

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/agent/protocol"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
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
	if a.Env.Calls != protocol.LlamaJSON {
		t.Fatalf("%s agent: env call syntax %v, want %v", a.Format.Family(), a.Env.Calls, protocol.LlamaJSON)
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
	if q.Env.Calls != protocol.Hermes {
		t.Errorf("word-level agent: env call syntax %v, want %v", q.Env.Calls, protocol.Hermes)
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
