package bench

import "testing"

func TestGenerateTiny(t *testing.T) {
	cfg := tiny()
	r, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	obj := jsonLine(t, r, cfg, "generate")
	positive(t, obj, "tokens_per_s", "median_s", "cpu_s", "decode_tokens_per_s", "prefill_tokens_per_s",
		"prefill_s", "decode_s", "ms_per_step", "prefill_share")
	for _, k := range []string{"forward_s", "backward_s", "optim_s", "loss", "grad_norm"} {
		if _, ok := obj[k]; ok {
			t.Errorf("generate result carries the train field %s", k)
		}
	}
	checkRuns(t, r, cfg.Repeats)
	// 3 slots x 4 new tokens = 12 generated tokens; 3 x 5 = 15 prompt tokens.
	if !near(r.TokensPerS, 12/r.MedianS) || !near(r.DecodeTokensPerS, 12/r.DecodeS) ||
		!near(r.PrefillTokensPerS, 15/r.PrefillS) || !near(r.MsPerStep, 1000*r.DecodeS/4) {
		t.Errorf("rates disagree with the times: %+v", r)
	}
	if r.PrefillShare >= 1 || r.DecodeTokensPerS <= r.TokensPerS {
		t.Errorf("decode-only rate %v must exceed the end-to-end %v; prefill share %v", r.DecodeTokensPerS, r.TokensPerS, r.PrefillShare)
	}
}

func TestGenerateResolvesAllThreads(t *testing.T) {
	cfg := tiny()
	cfg.Threads, cfg.Repeats = 0, 1
	r, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Config.Threads != cfg.threads() || r.Config.Threads < 1 {
		t.Errorf("threads 0 ran as %d, want the core count %d", r.Config.Threads, cfg.threads())
	}
}
