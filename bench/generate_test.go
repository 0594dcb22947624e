package bench

import (
	"slices"
	"strings"
	"testing"
)

func TestGenerateTiny(t *testing.T) {
	cfg := tiny()
	cfg.BandwidthGBs, cfg.Profile = 10, true
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
	// Weights read per step, by hand for vocab 97, hidden 32, inter 48, 2
	// layers, 4/2 heads of 8, q/k/v biases, untied lm_head, batch 3:
	// a layer is q 32*32 + k,v 2*32*16 + o 32*32 + mlp 3*32*48 + norms 2*32
	// + biases 32+16+16 = 7808; 2 layers + final norm 32 + 3 embedding rows
	// 96 + lm_head 97*32 = 18848 f32 = 75392 bytes.
	if r.WeightBytesPerStep != 75392 {
		t.Errorf("weight_bytes_per_step %d, want 75392", r.WeightBytesPerStep)
	}
	bound := 3 * 10e9 / 75392.0
	if r.ReadGBs != 10 || r.ReadGBsMeasured || !near(r.BoundTokensPerS, bound) || !near(r.BoundFraction, r.DecodeTokensPerS/bound) {
		t.Errorf("bound: read %v (measured %v), bound %v tok/s (want %v), fraction %v", r.ReadGBs, r.ReadGBsMeasured,
			r.BoundTokensPerS, bound, r.BoundFraction)
	}
	if r.DecodePath != "fused" || !strings.Contains(r.NoKernels, "head_dim") { // head_dim 8: the kernels need a multiple of 16
		t.Errorf("decode_path %q (no_kernels %q), want fused because of head_dim", r.DecodePath, r.NoKernels)
	}
	if p := r.StepMs; p == nil || !(p.Products > 0) || !(p.Sampling > 0) || p.Attention < 0 || p.Other < 0 {
		t.Errorf("step_ms %+v, want every phase", r.StepMs)
	} else if sum := p.Products + p.Attention + p.Sampling + p.Other; sum > 1.5*r.MsPerStep {
		t.Errorf("the phases add up to %v ms, more than a step's %v ms", sum, r.MsPerStep)
	}
}

// decode_path names the instruction set of the hand-written kernels that
// ran, as AGENTRL_CPU_KERNELS picked them (each set where this CPU has it);
// with the kernels off it says so, and the libtorch path runs.
func TestGenerateNamesKernels(t *testing.T) {
	cfg := tiny()
	cfg.Hidden, cfg.Repeats, cfg.BandwidthGBs = 64, 1, 10 // head_dim 16
	for _, isa := range []string{"avx512", "avx2", "off"} {
		t.Run(isa, func(t *testing.T) {
			t.Setenv("AGENTRL_CPU_KERNELS", isa)
			r, err := Generate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case isa == "off":
				if r.DecodePath != "fused" || r.NoKernels != "AGENTRL_CPU_KERNELS=off" {
					t.Errorf("decode_path %q, no_kernels %q; want fused, AGENTRL_CPU_KERNELS=off", r.DecodePath, r.NoKernels)
				}
			case strings.Contains(r.NoKernels, "the CPU lacks"):
				t.Skipf("%s: %s", isa, r.NoKernels)
			case r.DecodePath != "kernels ("+isa+")" || r.NoKernels != "":
				t.Errorf("decode_path %q, no_kernels %q; want kernels (%s)", r.DecodePath, r.NoKernels, isa)
			}
		})
	}
}

// Without a bandwidth given, Generate measures one: a positive figure
// marked as measured, and the fraction follows from it.
func TestGenerateMeasuresBandwidth(t *testing.T) {
	cfg := tiny()
	cfg.Repeats, cfg.Decode = 1, "unfused"
	r, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !(r.ReadGBs > 0) || !r.ReadGBsMeasured || r.DecodePath != "unfused" || !near(r.BoundFraction, r.DecodeTokensPerS/r.BoundTokensPerS) {
		t.Errorf("read_gbs %v measured %v path %q fraction %v", r.ReadGBs, r.ReadGBsMeasured, r.DecodePath, r.BoundFraction)
	}
	cfg.Decode = "fast"
	if _, err := Generate(cfg); err == nil {
		t.Error("decode path fast accepted")
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

// With --lora-rank generation decodes from the merged weights of fresh
// adapters on q_proj and v_proj: it runs on the fused path like the base
// (head_dim 8), reads as many weight bytes per step (75392, worked out in
// TestGenerateTiny), and its config says what it measured.
func TestGenerateLoRA(t *testing.T) {
	cfg := tiny()
	cfg.Repeats, cfg.BandwidthGBs, cfg.LoRARank, cfg.LoRATargets = 1, 10, 4, []string{"v_proj", "q_proj"}
	r, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.DecodePath != "fused" || r.WeightBytesPerStep != 75392 || !(r.DecodeTokensPerS > 0) {
		t.Errorf("decode path %q, weight bytes %d, decode rate %v", r.DecodePath, r.WeightBytesPerStep, r.DecodeTokensPerS)
	}
	if c := r.Config; c.LoRARank != 4 || c.LoRAAlpha != 8 || !slices.Equal(c.LoRATargets, []string{"v_proj", "q_proj"}) {
		t.Errorf("config lora %d %v %v", c.LoRARank, c.LoRAAlpha, c.LoRATargets)
	}
}
