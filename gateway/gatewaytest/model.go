// Package gatewaytest builds, for the gateway's tests and the CLI's, a real
// tiny policy that has learned one tool-using conversation: asked
// Question with the search tool, it calls search, and shown the tool's
// answer, it answers. It is a word-level Qwen2-style model fitted to the
// conversation with torch's AdamW until its loss is below 0.01 (greedy
// decoding then reproduces it); Folder saves it. It sits below the trainer
// and imports nothing of it.
package gatewaytest

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/toolcall"
	"github.com/agentrl/agentrl/torch"
)

// The conversation the model learns.
const (
	System    = "Answer the question. Search for the facts you need."
	Question  = "Where was the composer of Kamo born?"
	QueryArgs = `{"query": "Kamo composer"}`
	Response  = "Kamo was written by Ivo Sava, born in Tarn."
	Answer    = "<answer>Tarn</answer>"
	// Reply is the model's last turn: the chat template (Qwen3's) puts an
	// empty thinking block before the last assistant message, and the
	// model learned it.
	Reply = "<think>\n\n</think>\n\n" + Answer
	// Call is the model's first turn, up to the "</tool_call>" it stops at.
	Call     = "<tool_call>\n{\"name\": \"search\", \"arguments\": " + QueryArgs + "}\n</tool_call>"
	ToolName = "search"
	// ToolJSON is the search tool as a request's tools entry, exactly as
	// the Agents SDK (@openai/agents) sends a function tool with a zod
	// schema, so that every client renders the same prompt.
	ToolJSON = `{"type":"function","function":{"name":"search","description":"Search the corpus.","parameters":{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"query":{"type":"string"}},"required":["query"],"additionalProperties":false},"strict":true}}`
)

// Messages is the learned conversation up to the answer.
func Messages() []tokenizer.Message {
	return []tokenizer.Message{
		{Role: "system", Content: System},
		{Role: "user", Content: Question},
		{Role: "assistant", ToolCalls: []tokenizer.ToolCall{{Name: ToolName, Arguments: json.RawMessage(QueryArgs)}}},
		{Role: "tool", Content: Response},
		{Role: "assistant", Content: Answer},
	}
}

// Model is the trained policy.
type Model struct {
	Tok    *tokenizer.Tokenizer
	Format *tokenizer.ChatFormat
	Policy *torch.Model
}

var (
	once   sync.Once
	shared *Model
	errB   error
)

// Build returns the model, trained once per test binary; it skips the test
// when libtorch is not there.
func Build(t testing.TB) *Model {
	t.Helper()
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	once.Do(func() { shared, errB = build() })
	if errB != nil {
		t.Fatal(errB)
	}
	return shared
}

func build() (*Model, error) {
	tools := []json.RawMessage{json.RawMessage(ToolJSON)}
	boot, err := tokenizer.BuildWordLevel(nil, toolcall.SpecialTokens())
	if err != nil {
		return nil, err
	}
	bf, err := tokenizer.NewChatFormat(boot)
	if err != nil {
		return nil, err
	}
	text, err := bf.RenderText(Messages(), tools, false)
	if err != nil {
		return nil, err
	}
	// Words the clients' tests send besides the conversation.
	extra := "Say hello in one word. Hello there! What is the weather in Paris? You are a helpful assistant."
	tok, err := tokenizer.BuildWordLevel([]string{text, extra}, toolcall.SpecialTokens())
	if err != nil {
		return nil, err
	}
	cf, err := tokenizer.NewChatFormat(tok)
	if err != nil {
		return nil, err
	}
	ids, mask, err := cf.Render(Messages(), tools, false)
	if err != nil {
		return nil, err
	}
	m, err := torch.NewRandomModel(config(tok), torch.Float32, torch.CPU, false, 7)
	if err != nil {
		return nil, err
	}
	loss, err := learn(m, ids, mask, 150, 1e-2)
	if err != nil {
		m.Free()
		return nil, err
	}
	if loss > 0.01 {
		m.Free()
		return nil, fmt.Errorf("gatewaytest: the tiny model did not learn its conversation (loss %.4f)", loss)
	}
	return &Model{Tok: tok, Format: cf, Policy: m}, nil
}

// learn fits m to the conversation ids, whose mask is 1 on the tokens the
// model writes: steps AdamW steps (no weight decay) at learning rate lr on
// the mean negative log-likelihood of those tokens, the gradient norm
// clipped to 1. It returns the last step's loss.
func learn(m *torch.Model, ids []int32, mask []uint8, steps int, lr float64) (float64, error) {
	params, err := m.Params()
	if err != nil {
		return 0, err
	}
	defer func() {
		for _, p := range params {
			p.Free()
		}
	}()
	hp := torch.DefaultAdamW
	hp.LR, hp.WeightDecay = lr, 0
	opt, err := torch.NewAdamW(params, nil, []torch.AdamWGroup{hp})
	if err != nil {
		return 0, err
	}
	defer opt.Free()
	T := len(ids)
	b := torch.Batch{B: 1, T: T, IDs: make([]int64, T), Attn: make([]int64, T), Positions: make([]int64, T)}
	weight := make([]float32, T-1) // predicting token j from the tokens before it weighs weight[j-1]
	n := 0.0
	for j, id := range ids {
		b.IDs[j], b.Attn[j], b.Positions[j] = int64(id), 1, int64(j)
		if j > 0 && mask[j] == 1 {
			weight[j-1] = 1
			n++
		}
	}
	var loss float64
	for range steps {
		if loss, err = learnStep(m, opt, b, weight, n); err != nil {
			return 0, err
		}
	}
	return loss, nil
}

// learnStep is one step of learn: the loss, its gradient and the update.
func learnStep(m *torch.Model, opt *torch.AdamW, b torch.Batch, weight []float32, n float64) (float64, error) {
	s := torch.NewScopeOn(m.Device)
	defer s.Close()
	o, err := m.Forward(b, torch.ForwardOptions{Grad: true})
	if err != nil {
		return 0, err
	}
	s.Own(o.LogProbs)
	loss := s.DivScalar(s.Sum(s.Mul(s.Neg(o.LogProbs), s.Float32(weight, 1, int64(len(weight))))), n)
	if err := s.Err(); err != nil {
		return 0, err
	}
	if err := loss.Backward(); err != nil {
		return 0, err
	}
	if err := opt.Accumulate(); err != nil {
		return 0, err
	}
	if _, err := opt.ClipGradNorm(1); err != nil {
		return 0, err
	}
	if err := opt.Step(); err != nil {
		return 0, err
	}
	if err := opt.ZeroGrad(); err != nil {
		return 0, err
	}
	return loss.Item()
}

// config is the model's shape over tok's vocabulary.
func config(tok *tokenizer.Tokenizer) torch.Config {
	return torch.Config{ModelType: "qwen2", Vocab: tok.VocabSize(), Hidden: 32, Intermediate: 64, Layers: 2, Heads: 4,
		KVHeads: 2, HeadDim: 8, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 512, BOS: int(tok.EOS()), EOS: int(tok.EOS())}
}

// Untrained returns a model of the trained one's shape and vocabulary
// with its random initial weights (seed), freed when t ends: its
// next-token distributions are nearly uniform over the vocabulary, so
// sampling with different seeds gives different tokens by construction,
// where the trained model is nearly certain of many.
func (m *Model) Untrained(t testing.TB, seed uint64) *torch.Model {
	t.Helper()
	u, err := torch.NewRandomModel(config(m.Tok), torch.Float32, torch.CPU, false, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.Free)
	return u
}

// Folder saves the model as a Hugging Face folder (config, weights,
// tokenizer) in a temporary folder of t and returns it.
func (m *Model) Folder(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	if err := m.Policy.Save(dir); err != nil {
		t.Fatal(err)
	}
	if err := m.Tok.Save(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}
