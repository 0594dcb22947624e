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
	"github.com/agentrl/agentrl/trainer/results"
	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
)

// smallConfig is a small job in one synthetic world that training and
// test share (fresh worlds off, the general warm start, a quarter of the
// questions held out): the default job's lifecycle at a size and in a
// world that the tests below can reason about (freshConfig is the default
// job's fresh worlds at this size).
func smallConfig(dir string) config.Config {
	c := config.Default()
	c.Data.Synthetic.FreshWorlds = false
	c.Data.Synthetic.TestFraction = 0.25
	c.SFT.WarmStart = "general"
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
	// TensorBoard has every finite metric of every iteration as a scalar
	// at the iteration's step, as float32: the training metrics, the
	// evaluation, the baselines at iteration 0, the timings.
	files, _ := filepath.Glob(filepath.Join(dir, "small", "tb", "events.out.tfevents.*"))
	if len(files) != 1 {
		t.Fatalf("event files %v, want one in <run>/tb", files)
	}
	tb, err := readScalars(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range ms {
		n := 0
		for k, v := range it.Metrics {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			n++
			if got, ok := tb[int64(it.Iteration)][k]; !ok || got != float32(v) {
				t.Errorf("TensorBoard at step %d: %s = %v (%v), want %v", it.Iteration, k, got, ok, float32(v))
			}
		}
		if len(tb[int64(it.Iteration)]) != n {
			t.Errorf("TensorBoard at step %d has %d scalars, want the %d finite metrics", it.Iteration, len(tb[int64(it.Iteration)]), n)
		}
	}
	for step, k := range map[int64]string{0: metric.NaiveRAG + metric.EM, 1: metric.RewardMean, 2: metric.Eval + metric.EM} {
		if _, ok := tb[step][k]; !ok {
			t.Errorf("TensorBoard has no %s at step %d", k, step)
		}
	}
	for _, k := range []string{metric.TimeIterationS, metric.HostMappedGB, metric.HostPeakGB, metric.EngineRefreshes, metric.EngineEagerSteps} {
		if _, ok := tb[1][k]; !ok {
			t.Errorf("TensorBoard has no %s at step 1", k)
		}
	}
	// On the CPU every decode step of the sampler's engine is eager.
	if v := tb[1][metric.EngineEagerSteps]; !(v > 0) {
		t.Errorf("%s at step 1 is %v, want the iteration's decode steps", metric.EngineEagerSteps, v)
	}
	train, _ := s.LoadIteration(1, trajectory.Train)
	if len(train) != 8 {
		t.Fatalf("iteration 1 stored %d training trajectories, want 4 prompts x 2 samples", len(train))
	}
	// The training forward's logprobs and entropies are stored for the
	// trajectories learned from, on their action tokens: logprobs within
	// rounding of the behaviour ones (the engine decodes the same f32
	// weights), entropies positive.
	learned := 0
	for _, x := range train {
		if x.TrainLogprobs == nil {
			continue
		}
		learned++
		for j, m := range x.Mask {
			lp, ent := x.TrainLogprobs[j], x.Entropies[j]
			if m == 0 && (lp != 0 || ent != 0) || m == 1 && (math.Abs(float64(lp-x.Logprobs[j])) > 1e-3 || !(ent > 0)) {
				t.Fatalf("%s token %d (mask %d): stored train logprob %v (behaviour %v), entropy %v", x.ID, j, m, lp, x.Logprobs[j], ent)
			}
		}
	}
	if learned == 0 {
		t.Fatal("no stored training trajectory has the training forward's logprobs")
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
// far off), and the job completes. The mismatch telemetry sees it: a
// positive KL below the warning threshold (a correct pipeline never
// reaches it), ratios on both sides of 1; and the correction, on by
// default for bf16 rollouts, weighs the tokens about 1.
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
		kl, hi, lo, w := m.Metrics["mismatch_kl"], m.Metrics["mismatch_ratio_max"], m.Metrics["mismatch_ratio_min"], m.Metrics["rollout_weight_mean"]
		t.Logf("iteration %d: mismatch KL %.3g, ratio [%.4g, %.4g], beyond bound %.3g, mean weight %.6g, max gap %.3g",
			m.Iteration, kl, lo, hi, m.Metrics["mismatch_beyond_bound"], w, v)
		if !(kl > 0 && kl < cfg.Algorithm.MismatchWarnKL) || !(hi > 1 && lo < 1) || !(w > 0.9 && w < 1.1) {
			t.Fatalf("iteration %d: mismatch KL %v, ratio [%v, %v], mean weight %v; want 0 < KL < %v, ratios around 1, weights about 1",
				m.Iteration, kl, lo, hi, w, cfg.Algorithm.MismatchWarnKL)
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
	refreshes := 0.0
	for _, m := range ms {
		if v, ok := m.Metrics["logprob_mismatch_max"]; ok && !(v < 0.25) {
			t.Fatalf("iteration %d: behaviour vs training logprobs differ by up to %v under autocast", m.Iteration, v)
		}
		// Under autocast the sampler decodes on the fused path, whose
		// weights are rewritten when the policy's changed: before the
		// rollout and before an evaluation after the update, never per step.
		if m.Iteration > 0 {
			r, steps := m.Metrics[metric.EngineRefreshes], m.Metrics[metric.EngineEagerSteps]
			if r > 2 || !(steps > 2) {
				t.Errorf("iteration %d: %v fused weight rewrites over %v decode steps, want at most 2 over many", m.Iteration, r, steps)
			}
			refreshes += r
		}
	}
	if refreshes == 0 {
		t.Error("the fused weights were never rewritten: the engine would decode with stale weights")
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
	_, storePath, dir := runToEnd(t, cfg)
	return storedMetrics(t, storePath), dir
}

// runToEnd runs cfg in-process to the end and returns its results table,
// its store's path and its run folder.
func runToEnd(t *testing.T, cfg config.Config) (*results.Table, string, string) {
	t.Helper()
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Run(context.Background(), nil)
	if err != nil {
		tr.Close()
		t.Fatal(err)
	}
	storePath, dir := tr.StorePath(), tr.Dir()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	return res, storePath, dir
}

// storedMetrics reads every iteration's metrics from the store at path.
func storedMetrics(t *testing.T, path string) []store.IterationMetrics {
	t.Helper()
	s, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ms, err := s.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	return ms
}
