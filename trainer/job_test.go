package trainer

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/torch/safetensors"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
)

// smallConfig is the default job at reduced size.
func smallConfig(dir string) config.Config {
	c := config.Default()
	c.Run.Dir = dir
	c.Run.Name = "small"
	c.Run.Iterations = 2
	c.Run.EvalEvery = 2
	c.Run.SaveEvery = 1
	c.Data.Synthetic.Entities = 24
	c.Data.Synthetic.Questions = 40
	c.Data.Synthetic.MaxHops = 2
	c.Data.Synthetic.OODQuestions = 4
	c.Model.Tiny.Hidden = 32
	c.Model.Tiny.Intermediate = 64
	c.Model.Tiny.Heads = 2
	c.Model.Tiny.KVHeads = 1
	c.Rollout.BatchSize = 4
	c.Rollout.GroupSize = 2
	c.Rollout.Slots = 8
	c.Algorithm.MiniBatch = 4
	c.Algorithm.MicroBatch = 4
	c.SFT.Demos = 16
	c.SFT.Epochs = 1
	c.SFT.Batch = 8
	c.Eval.MaxEval = 6
	c.Device.Threads = 2
	return c
}

// The default job at reduced size, end to end: trajectories are stored,
// masks are right, rewards finite, the final policy is exported.
func TestDefaultJobSmall(t *testing.T) {
	dir := t.TempDir()
	cfg := smallConfig(dir)
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Run(context.Background(), nil)
	if err != nil {
		tr.Close()
		t.Fatal(err)
	}
	storePath := tr.StorePath()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if len(res.Methods) != 3 {
		t.Fatalf("results table has methods %v, want naive RAG, base tool call and RL", res.Methods)
	}
	// Each method is evaluated on the out-of-domain split too: its 4
	// questions, each an EM of 0 or 1, so the EM is a multiple of 1/4.
	for _, m := range res.Methods {
		o, ok := res.OOD[m]
		if em := o[metric.EM] * 4; !ok || o[metric.N] != 4 || em != math.Round(em) {
			t.Errorf("%s: out-of-domain metrics %v, want EM over 4 questions", m, o)
		}
	}
	s, err := store.Open(storePath)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for iter := 0; iter <= 2; iter++ {
		trs, err := s.LoadIteration(iter, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(trs) == 0 {
			t.Fatalf("iteration %d stored no trajectory", iter)
		}
		for _, x := range trs {
			checkInvariants(t, x)
		}
	}
	// Every metric the job records is declared in trainer/metric.
	ms, err := s.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range ms {
		for k := range it.Metrics {
			if !metric.Declared(k) {
				t.Errorf("iteration %d records %q, which trainer/metric does not declare", it.Iteration, k)
			}
		}
	}
	train, _ := s.LoadIteration(1, trajectory.Train)
	if len(train) != 8 {
		t.Fatalf("iteration 1 stored %d training trajectories, want 4 prompts x 2 samples", len(train))
	}
	if _, err := os.Stat(filepath.Join(dir, "small", "final", "model.safetensors")); err != nil {
		t.Fatalf("final policy not exported: %v", err)
	}
}

func checkInvariants(t *testing.T, x *trajectory.Trajectory) {
	t.Helper()
	n := len(x.Tokens)
	if len(x.Mask) != n || len(x.Logprobs) != n || len(x.TurnOf) != n {
		t.Fatalf("%s: arrays of different lengths", x.ID)
	}
	if x.Stop == trajectory.StopError {
		t.Fatalf("%s ended in error: %s", x.ID, x.Error)
	}
	if math.IsNaN(x.Reward) || math.IsInf(x.Reward, 0) {
		t.Fatalf("%s: reward %v", x.ID, x.Reward)
	}
	for j := 0; j < x.PromptLen; j++ {
		if x.Mask[j] != 0 || x.TurnOf[j] != -1 {
			t.Fatalf("%s: prompt token %d has mask %d turn %d", x.ID, j, x.Mask[j], x.TurnOf[j])
		}
	}
	for j := x.PromptLen; j < n; j++ {
		if x.Mask[j] == 1 && x.Logprobs[j] > 0 {
			t.Fatalf("%s: sampled token %d has logprob %v > 0", x.ID, j, x.Logprobs[j])
		}
		if x.Mask[j] == 0 && x.Logprobs[j] != 0 {
			t.Fatalf("%s: observation token %d carries a logprob", x.ID, j)
		}
	}
	if x.Mask[n-1] != 1 {
		t.Fatalf("%s: the last token is not the policy's", x.ID)
	}
}

// Rollouts decoding from a bf16 copy of an f32 policy: the copy is
// refreshed before every rollout, so the behaviour logprobs stay within bf16
// rounding of the training forward's (a stale or never-filled copy would be
// far off), and the job completes.
func TestRolloutInBF16(t *testing.T) {
	cfg := smallConfig(t.TempDir())
	cfg.Rollout.DType = "bf16"
	ms, _ := runJob(t, cfg)
	seen := 0
	for _, m := range ms {
		v, ok := m.Metrics["logprob_mismatch_max"]
		if !ok {
			continue
		}
		seen++
		if !(v > 0 && v < 0.25) {
			t.Fatalf("iteration %d: behaviour vs training logprobs differ by up to %v; want bf16 rounding (0 < d < 0.25)", m.Iteration, v)
		}
	}
	if seen != cfg.Run.Iterations {
		t.Fatalf("%d iterations logged the mismatch, want %d", seen, cfg.Run.Iterations)
	}
}

// With device.autocast the job runs its forward passes under bf16
// autocast (here on the CPU): rollouts and the training forward both run
// under it, so the behaviour logprobs stay close to the recomputed ones,
// and the weights saved at the end are still f32.
func TestAutocastJob(t *testing.T) {
	cfg := smallConfig(t.TempDir())
	cfg.Device.Autocast = true
	ms, dir := runJob(t, cfg)
	for _, m := range ms {
		if v, ok := m.Metrics["logprob_mismatch_max"]; ok && !(v < 0.25) {
			t.Fatalf("iteration %d: behaviour vs training logprobs differ by up to %v under autocast", m.Iteration, v)
		}
	}
	r, err := safetensors.Open(filepath.Join(dir, "final"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, n := range r.Names() {
		if info, _ := r.Info(n); info.DType != safetensors.F32 {
			t.Fatalf("saved %s is %v, want F32: autocast must not change the weights' dtype", n, info.DType)
		}
	}
}

// runJob runs cfg in-process to the end and returns its stored metrics
// and its run folder.
func runJob(t *testing.T, cfg config.Config) ([]store.IterationMetrics, string) {
	t.Helper()
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background(), nil); err != nil {
		tr.Close()
		t.Fatal(err)
	}
	storePath, dir := tr.StorePath(), tr.Dir()
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
	return ms, dir
}
