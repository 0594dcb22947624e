package bench

import (
	"math"
	"testing"
)

func TestTrainTiny(t *testing.T) {
	cfg := tiny()
	r, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	obj := jsonLine(t, r, cfg, "train")
	positive(t, obj, "tokens_per_s", "median_s", "cpu_s", "prepare_s", "forward_s", "backward_s", "optim_s", "grad_norm", "peak_rss_mb")
	for _, k := range []string{"decode_tokens_per_s", "prefill_s", "ms_per_step"} {
		if _, ok := obj[k]; ok {
			t.Errorf("train result carries the generate field %s", k)
		}
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
	// old logprobs are recomputed from the same weights, so the ratio is 1
	// and the loss is minus the token mean of the advantages over the 9
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
