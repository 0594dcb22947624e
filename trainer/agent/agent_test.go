package agent

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs/synth"
	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/toolcall"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/rollout"
)

// world is a small synthetic world and the path of its search index.
func world(t *testing.T) (*synth.World, string) {
	t.Helper()
	w, err := synth.Generate(synth.Config{Seed: 1, Entities: 24, Questions: 20, MaxHops: 2, TestFraction: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(t.TempDir(), "index.db")
	if err := search.BuildIndex(context.Background(), index, w.Passages, nil); err != nil {
		t.Fatal(err)
	}
	return w, index
}

// The synthetic world's agent: its word-level tokenizer covers the
// prompts, the schemas are listed only when asked for, the agent's
// episode is the tool-using system prompt and the question, and the naive
// RAG baseline's puts the retrieved passages in the prompt.
func TestSyntheticAgent(t *testing.T) {
	w, index := world(t)
	cfg := config.Default()
	for _, show := range []bool{true, false} {
		a, err := New(context.Background(), Spec{Config: cfg, Index: index, World: w, ShowSchemas: show})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		if len(a.Tools) != 1 || a.Tool("search") == nil || a.Tool("lookup") != nil {
			t.Fatalf("tools %v, want search alone", a.Tools)
		}
		if (len(a.Schemas) == 1) != show {
			t.Errorf("ShowSchemas %v: %d schemas listed", show, len(a.Schemas))
		}
		if a.Env.External.Scorer != nil || a.Env.MaxTurns != cfg.Env.MaxTurns {
			t.Errorf("env %+v, want env.* without a scorer", a.Env)
		}
		task := w.Train[0]
		s, err := a.Episode(task)
		if err != nil {
			t.Fatal(err)
		}
		if s.System != toolcall.SystemPrompt || s.User != task.Question || len(s.Tools) != len(a.Schemas) || s.Env == nil {
			t.Errorf("episode %+v", s)
		}
		ids, err := a.Chat.Prompt(s.System, s.User, s.Tools)
		if err != nil || len(ids) == 0 {
			t.Errorf("prompt: %d tokens, %v", len(ids), err)
		}
		rag, err := a.RAGEpisodes(context.Background())(task)
		if err != nil {
			t.Fatal(err)
		}
		if rag.System != toolcall.RAGSystemPrompt || !strings.HasPrefix(rag.User, "Question: "+task.Question+"\nPassages:\nDoc 1 (Title: ") || rag.Tools != nil {
			t.Errorf("naive RAG episode %+v", rag)
		}
	}
}

func TestNewNeedsATokenizer(t *testing.T) {
	cfg := config.Default()
	cfg.Tools.Enabled = []string{"calculator"}
	if _, err := New(context.Background(), Spec{Config: cfg}); err == nil || !strings.Contains(err.Error(), "a tokenizer is needed") {
		t.Errorf("no tokenizer and no world: err = %v", err)
	}
	if _, err := New(context.Background(), Spec{Config: cfg, TokenizerDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Errorf("a folder without a tokenizer: err = %v", err)
	}
}

// sums are the sums of each of m's parameters.
func sums(t *testing.T, m *torch.Model) []float64 {
	t.Helper()
	ps, err := m.Params()
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, p := range ps {
		s, _, err := p.Checksum()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
		p.Free()
	}
	return out
}

// close reports whether every sum of a is within tol of b's.
func close(a, b []float64, tol float64) bool {
	for i := range a {
		if math.Abs(a[i]-b[i]) > tol {
			return false
		}
	}
	return len(a) == len(b)
}

// tinyPolicy is a random one-layer f32 policy of 64 tokens, freed with the
// test; the test skips without the libtorch shim.
func tinyPolicy(t *testing.T) *torch.Model {
	t.Helper()
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	mc := torch.Config{ModelType: "qwen2", Vocab: 64, Hidden: 32, Intermediate: 64, Layers: 1, Heads: 2, KVHeads: 1,
		HeadDim: 16, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 16}
	policy, err := torch.NewRandomModel(mc, torch.Float32, torch.CPU, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(policy.Free)
	return policy
}

// A sampler decodes from the policy in the policy's precision, and from a
// bf16 copy otherwise, which holds the policy's weights (to bf16's
// rounding) and follows them only when synced.
func TestSamplerCopyFollowsThePolicyOnSync(t *testing.T) {
	policy := tinyPolicy(t)
	same, err := NewSampler(policy, torch.Float32, Mode{}, 1, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer same.Free()
	if same.copy != nil {
		t.Error("a sampler in the policy's precision made a copy")
	}
	bf, err := NewSampler(policy, torch.BFloat16, Mode{}, 1, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer bf.Free()
	if bf.copy == nil || bf.copy.DType != torch.BFloat16 {
		t.Fatal("no bf16 copy")
	}
	// bf16 keeps 8 bits of mantissa: a sum of at most a few thousand
	// weights of about 0.02 moves by well under 0.05.
	const tol = 0.05
	if err := bf.Sync(); err != nil {
		t.Fatal(err)
	}
	if !close(sums(t, bf.copy), sums(t, policy), tol) {
		t.Fatal("after Sync the copy does not hold the policy's weights")
	}
	other, err := torch.NewRandomModel(policy.Config, torch.Float32, torch.CPU, false, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Free()
	if err := policy.CopyWeightsFrom(other); err != nil {
		t.Fatal(err)
	}
	if close(sums(t, bf.copy), sums(t, policy), tol) {
		t.Fatal("the copy followed the policy before Sync")
	}
	if err := bf.Sync(); err != nil {
		t.Fatal(err)
	}
	if !close(sums(t, bf.copy), sums(t, policy), tol) {
		t.Error("the copy did not follow the policy on Sync")
	}
}

// NewCopySampler decodes from a copy even in the policy's own precision
// (asynchronous training updates the policy while the engine decodes):
// the copy holds the policy's weights exactly after Sync, and keeps them
// while the policy changes, until the next Sync.
func TestCopySamplerKeepsItsWeightsUntilSync(t *testing.T) {
	policy := tinyPolicy(t)
	e, err := NewCopySampler(policy, torch.Float32, Mode{}, 1, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Free()
	if e.copy == nil || e.copy.DType != torch.Float32 {
		t.Fatal("no float32 copy")
	}
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	before := sums(t, policy)
	if !close(sums(t, e.copy), before, 0) {
		t.Fatal("after Sync the copy does not hold the policy's weights exactly")
	}
	other, err := torch.NewRandomModel(policy.Config, torch.Float32, torch.CPU, false, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Free()
	if err := policy.CopyWeightsFrom(other); err != nil {
		t.Fatal(err)
	}
	if !close(sums(t, e.copy), before, 0) {
		t.Fatal("the copy changed with the policy before Sync")
	}
	if err := e.Sync(); err != nil {
		t.Fatal(err)
	}
	if !close(sums(t, e.copy), sums(t, policy), 0) {
		t.Error("the copy did not follow the policy on Sync")
	}
}

// A synthetic world's word-level tokenizer keeps the default context
// append whether the agent makes it or reads it back
// from a folder (a checkpoint's policy/, as a resume does). Keyed on the
// folder instead, a resumed demo run rendered each turn as Qwen3 and
// stored segments its uninterrupted run did not.
func TestWordLevelContextDefaultsToAppend(t *testing.T) {
	w, index := world(t)
	fresh, err := New(context.Background(), Spec{Config: config.Default(), Index: index, World: w})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	dir := t.TempDir()
	if err := fresh.Tokenizer.Save(dir); err != nil {
		t.Fatal(err)
	}
	resumed, err := New(context.Background(), Spec{Config: config.Default(), Index: index, World: w, TokenizerDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	for name, a := range map[string]*Agent{"fresh": fresh, "read back": resumed} {
		if m := a.Chat.(*rollout.ChatFormat).Context().Mode; m != rollout.ContextAppend {
			t.Errorf("%s word-level tokenizer: env.context %q, want append", name, m)
		}
	}
}

// With algorithm.routing_replay the rollout sampler's engine records each
// token's experts (a byte per choice: 5 tokens x 2 sparse layers x top-2),
// for the rollout to keep; a dense policy is refused by name.
func TestRolloutSamplerRecordsRouting(t *testing.T) {
	cfg := config.Default()
	cfg.Algorithm.RoutingReplay = true
	cfg.Rollout.Slots, cfg.Env.MaxTokens = 2, 16
	if _, err := NewRolloutSampler(cfg, tinyPolicy(t), torch.Float32); err == nil || !strings.Contains(err.Error(), "algorithm.routing_replay: the policy (qwen2) has no mixture-of-experts layer") {
		t.Errorf("a dense policy: %v", err)
	}
	moe, err := torch.NewRandomModel(torch.Config{ModelType: "qwen3_moe", Vocab: 64, Hidden: 16, Intermediate: 32, Layers: 2,
		Heads: 2, KVHeads: 1, HeadDim: 8, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 32,
		MoE: torch.MoE{Experts: 4, ExpertsPerToken: 2, Intermediate: 8, SparseStep: 1}}, torch.Float32, torch.CPU, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer moe.Free()
	s, err := NewRolloutSampler(cfg, moe, torch.Float32)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Free()
	if err := s.Prefill(1, []int64{3, 1, 4, 1, 5}); err != nil {
		t.Fatal(err)
	}
	b, err := s.Decoder().RoutingBytes(1)
	if err != nil || len(b) != 5*2*2 {
		t.Errorf("the engine's record of 5 tokens: %d bytes, %v; want 20", len(b), err)
	}
}
