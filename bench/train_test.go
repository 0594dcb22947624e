package bench

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestTrainTiny(t *testing.T) {
	cfg := tiny()
	r, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	obj := jsonLine(t, r, cfg, "train")
	positive(t, obj, "tokens_per_s", "median_s", "cpu_s", "forward_s", "backward_s", "optim_s", "grad_norm", "peak_rss_mb", "estimate_mb")
	// One step over the whole batch: the old logprobs come from it.
	if obj["old_from_step"] != true {
		t.Errorf("old_from_step %v, want true (GRPO in one step over the batch)", obj["old_from_step"])
	}
	for _, k := range []string{"decode_tokens_per_s", "prefill_s", "ms_per_step"} {
		if _, ok := obj[k]; ok {
			t.Errorf("train result carries the generate field %s", k)
		}
	}
	// AdamW steps fused where libtorch has the kernel, else as a loop.
	if a := obj["adamw"]; a != "fused" && a != "loop" {
		t.Errorf("adamw %v, want fused or loop", a)
	}
	// On the CPU attention runs as plain ops (SDPA is the CUDA path), so
	// no SDPA kernel is named.
	if b, ok := obj["sdpa_backend"]; ok {
		t.Errorf("sdpa_backend %v on the CPU, want none", b)
	}
	checkRuns(t, r, cfg.Repeats)
	// 3 sequences x 8 tokens per update.
	if !near(r.TokensPerS, 24/r.MedianS) {
		t.Errorf("tokens_per_s %v, want 24/%v", r.TokensPerS, r.MedianS)
	}
	// The batch: prompts of 8/2 + i%3 = 4, 5 and 6 tokens, so 4, 3 and 2
	// policy tokens; rewards i%3 = 0, 1, 2 in one group.
	for i, tr := range trainBatch(cfg) {
		var policy int
		for _, m := range tr.Mask {
			policy += int(m)
		}
		if len(tr.Tokens) != 8 || tr.PromptLen != 4+i || policy != 4-i || tr.Outcome != float64(i) || tr.Group != 0 {
			t.Fatalf("trajectory %d: %d tokens, prompt %d, %d policy tokens, reward %v, group %d", i, len(tr.Tokens), tr.PromptLen, policy, tr.Outcome, tr.Group)
		}
	}
	// GRPO: mean 1 and Bessel std 1, so A = -1, 0, 1 over (1 + 1e-6). The
	// old logprobs are the step's own logprobs, so the ratio is 1 and the
	// loss is minus the token mean of the advantages over the 9
	// policy tokens: -(4*-1 + 3*0 + 2*1) / 9 / (1 + 1e-6).
	if want := 2.0 / 9 / (1 + 1e-6); math.Abs(r.Loss-want) > 1e-5 {
		t.Errorf("loss %v, want %v", r.Loss, want)
	}
}

// The update is the same with the logits whole, in chunks of 5 tokens
// (which divide neither a sequence's 7 positions nor the 21 of the batch)
// and tied to the embedding: the loss (2/9 by hand, above) and the
// gradient norm agree within 1e-5.
func TestTrainLogitsChunks(t *testing.T) {
	for _, tied := range []bool{false, true} {
		var first Result
		for i, chunk := range []int{0, 5} {
			cfg := tiny()
			cfg.Repeats, cfg.Tied, cfg.LogitsChunk = 1, tied, chunk
			r, err := Train(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = r
				continue
			}
			if math.Abs(r.Loss-first.Loss) > 1e-5 || math.Abs(r.GradNorm-first.GradNorm) > 1e-5*math.Max(1, first.GradNorm) {
				t.Errorf("tied %v, chunk %d: loss %v, grad norm %v; whole logits: %v, %v", tied, chunk, r.Loss, r.GradNorm, first.Loss, first.GradNorm)
			}
		}
	}
}

// With --lora-rank the update trains rank-4 adapters on every projection
// of the tiny model over its frozen random base. The optimizer holds the
// adapters alone: per layer q 4*32 + 32*4 = 256, k and v 4*32 + 16*4 =
// 192 each, o 256, gate and up 4*32 + 48*4 = 320 each, down 4*48 + 32*4 =
// 320, so 1856 x 2 layers = 3712 values, against the full model's
// embedding 97*32 + 2 layers of 7808 (see generate_test.go) + final norm
// 32 + lm_head 97*32 = 21856. The adapters start with B = 0, so the
// LoRA model equals its base and the loss is the full update's 2/9 (see
// TestTrainTiny); with checkpointing the loss and the gradient norm are
// the same. The result's config holds the resolved settings (alpha 0:
// twice the rank; all seven targets).
func TestTrainLoRA(t *testing.T) {
	full := tiny()
	full.Repeats = 1
	rf, err := Train(full)
	if err != nil {
		t.Fatal(err)
	}
	if rf.TrainableParams != 21856 || rf.Config.LoRARank != 0 || rf.Config.LoRATargets != nil {
		t.Errorf("full fine-tune: trainable_params %d (want 21856), lora %d %v", rf.TrainableParams, rf.Config.LoRARank, rf.Config.LoRATargets)
	}
	var first Result
	for i, ckpt := range []bool{false, true} {
		cfg := tiny()
		cfg.Repeats, cfg.LoRARank, cfg.Checkpointing = 1, 4, ckpt
		r, err := Train(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.TrainableParams != 3712 {
			t.Errorf("LoRA trainable_params %d, want 3712", r.TrainableParams)
		}
		if c := r.Config; c.LoRAAlpha != 8 || !slices.Equal(c.LoRATargets, []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}) {
			t.Errorf("LoRA config alpha %v targets %v, want 8 and all", c.LoRAAlpha, c.LoRATargets)
		}
		if want := 2.0 / 9 / (1 + 1e-6); math.Abs(r.Loss-want) > 1e-5 || !(r.GradNorm > 0) {
			t.Errorf("LoRA loss %v (want %v), grad norm %v", r.Loss, want, r.GradNorm)
		}
		if i == 0 {
			first = r
		} else if math.Abs(r.GradNorm-first.GradNorm) > 1e-5*first.GradNorm {
			t.Errorf("grad norm %v with checkpointing, %v without", r.GradNorm, first.GradNorm)
		}
	}
	bad := tiny()
	bad.LoRARank, bad.LoRATargets = 4, []string{"q_proj", "lm_head"}
	if _, err := Train(bad); err == nil || !strings.Contains(err.Error(), `lora target "lm_head"`) {
		t.Errorf("target lm_head: %v", err)
	}
	bad.LoRARank = -1
	if _, err := Train(bad); err == nil || !strings.Contains(err.Error(), "lora_rank") {
		t.Errorf("rank -1: %v", err)
	}
}
