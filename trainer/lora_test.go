package trainer

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/metric"
)

// loraConfig is the small job with LoRA r=4, alpha 8 on every projection,
// PPO with a separate critic and a KL loss: every LoRA model in play.
func loraConfig(dir string) config.Config {
	c := smallConfig(dir)
	c.Run.Name = "lora"
	c.Model.LoRA.Rank, c.Model.LoRA.Alpha = 4, 8
	c.Algorithm.Estimator, c.Model.Critic = "gae", "separate"
	c.Algorithm.KLCoef, c.Algorithm.KLMode = 0.01, "loss"
	c.Optim.LR, c.Optim.CriticLR = 1e-3, 1e-3
	return c
}

// numbers counts the numbers of tensors.
func numbers(t *testing.T, ts []*torch.Tensor) int64 {
	t.Helper()
	var n int64
	for _, p := range ts {
		shape, err := p.Shape()
		if err != nil {
			t.Fatal(err)
		}
		k := int64(1)
		for _, d := range shape {
			k *= d
		}
		n += k
	}
	return n
}

// A LoRA run holds adapters over one base: the learner trains (and the
// ranks would exchange) only the adapters and the critic's value head,
// the KL reference is the base itself, and a run with model.lora.merge
// exports a full model folder whose logits are the adapters'.
//
// The small job's tiny model: hidden 32, 2 heads of 16 (q out 32), 1 kv
// head (k, v out 16), intermediate 64, 2 layers. Adapters of rank 4,
// r (in + out) a target: q 4 (32+32) = 256, k and v 4 (32+16) = 192 each,
// o 256, gate and up 4 (32+64) = 384 each, down 4 (64+32) = 384: 2048 a
// layer, 4096 in all; the critic's the same plus its value head 32 + 1.
func TestLoRAModels(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	dir := t.TempDir()
	cfg := loraConfig(dir)
	cfg.Model.LoRA.Merge = true
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	l := tr.models.learner
	if l.Policy().LoRA() == nil || l.Critic().LoRA() == nil || !l.Critic().ValueHead {
		t.Fatal("the policy and the critic are not LoRA models (the critic with a value head)")
	}
	if l.Reference() != tr.models.WarmStartModel() { // with LoRA, the base
		t.Error("the KL reference is not the base model")
	}
	if n := numbers(t, l.Params()); n != 4096+4096+33 {
		t.Errorf("the learner trains %d numbers, want 4096 + 4096 + 33", n)
	}
	for _, n := range l.ParamNames() {
		if !torch.IsValueHead(n) && !strings.HasSuffix(n, ".lora_A.weight") && !strings.HasSuffix(n, ".lora_B.weight") {
			t.Errorf("the learner trains %s, not an adapter", n)
		}
	}
	if _, err := tr.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	run := RunDir(cfg)
	if pathExists(filepath.Join(run, "ref")) || !pathExists(filepath.Join(run, "base", "config.json")) {
		t.Error("want <run>/base (the warm-started base) and no ref/ copy")
	}

	// The reference's logprobs are the policy's with its adapters off,
	// exactly, and not the trained policy's.
	ids := []int64{3, 9, 4, 17, 8, 2, 11, 5}
	b := batchOf(ids)
	policy := l.Policy()
	on := forwardLogprobs(t, policy, b)
	if err := policy.SetAdapters(false); err != nil {
		t.Fatal(err)
	}
	off := forwardLogprobs(t, policy, b)
	if err := policy.SetAdapters(true); err != nil {
		t.Fatal(err)
	}
	ref := forwardLogprobs(t, l.Reference(), b)
	if !slices.Equal(off, ref) {
		t.Errorf("reference logprobs %v, the policy's with adapters off %v", ref, off)
	}
	if slices.Equal(on, ref) {
		t.Error("the trained policy's logprobs equal the base's: the adapters never trained")
	}

	// final/ is the merged model: its logits are the adapters' (f32,
	// merged weights rounded once: within 1e-5).
	final := filepath.Join(run, "final")
	if pathExists(filepath.Join(final, "adapter_config.json")) {
		t.Fatal("model.lora.merge: final/ is an adapter folder")
	}
	merged, err := torch.LoadModel(final, torch.Float32, torch.CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer merged.Free()
	if d := maxDiff(forwardLogprobs(t, merged, b), on); d > 1e-5 {
		t.Errorf("the merged export's logprobs differ from the adapters' by %g", d)
	}

	// The rollouts decode from the merged weights: their logprobs are the
	// training forward's.
	ms := storedMetrics(t, filepath.Join(run, "store.db"))
	for _, m := range ms {
		if v, ok := m.Metrics[metric.LogprobMismatchMax]; ok && !(v < 1e-4) {
			t.Errorf("iteration %d: rollout logprobs differ from the training forward's by %g", m.Iteration, v)
		}
	}
}

// A LoRA run's final export is a PEFT adapter folder (with the tokenizer)
// naming its base, the run's saved base/; with a shared critic the policy's
// value head is beside the adapters (as beside a full model), and the
// learner trains the adapters and the head: 4096 + 33 numbers.
func TestLoRAExportsAdapters(t *testing.T) {
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	dir := t.TempDir()
	cfg := loraConfig(dir)
	cfg.Model.Critic = "shared"
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if l := tr.models.learner; l.Critic() != l.Policy() || !l.Policy().ValueHead || numbers(t, l.Params()) != 4096+33 {
		t.Errorf("shared critic: the value head is not on the policy's adapters, or the learner trains other numbers")
	}
	if _, err := tr.Run(context.Background(), nil); err != nil {
		tr.Close()
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	final := filepath.Join(RunDir(cfg), "final")
	for _, f := range []string{"adapter_config.json", "adapter_model.safetensors", "tokenizer.json", "value_head.safetensors"} {
		if !pathExists(filepath.Join(final, f)) {
			t.Errorf("final/ has no %s", f)
		}
	}
	if pathExists(filepath.Join(final, "model.safetensors")) {
		t.Error("final/ holds full weights beside the adapters")
	}
	b, err := os.ReadFile(filepath.Join(final, "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	base, _ := filepath.Abs(filepath.Join(RunDir(cfg), "base"))
	if !strings.Contains(string(b), `"base_model_name_or_path": "`+base+`"`) {
		t.Errorf("adapter_config.json does not name the base %s:\n%s", base, b)
	}
}

// batchOf is one sequence as a batch.
func batchOf(ids []int64) torch.Batch {
	attn, pos := make([]int64, len(ids)), make([]int64, len(ids))
	for i := range ids {
		attn[i], pos[i] = 1, int64(i)
	}
	return torch.Batch{B: 1, T: len(ids), IDs: ids, Attn: attn, Positions: pos}
}

// forwardLogprobs are m's per-token logprobs of b, without gradients.
func forwardLogprobs(t *testing.T, m *torch.Model, b torch.Batch) []float32 {
	t.Helper()
	o, err := m.Forward(b, torch.ForwardOptions{Temperature: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Free()
	v, err := o.LogProbs.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// maxDiff is the largest |a[i] - b[i]|, +Inf when the lengths differ.
func maxDiff(a, b []float32) float64 {
	d := math.Inf(1)
	if len(a) == len(b) {
		d = 0
		for i := range a {
			d = math.Max(d, math.Abs(float64(a[i]-b[i])))
		}
	}
	return d
}
