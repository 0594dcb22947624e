package torch

import (
	"bufio"
	"math"
	"os"
	"strings"
	"testing"
)

// kernelConfig is a tiny model the hand-written decode step supports
// (head_dim 16), with sizes that exercise every edge of its kernels: hidden
// 40 and intermediate 52 are not multiples of 16 or 32 (masked column
// tails), vocab 97 is not a multiple of 4 (a one-row block), and 4 query
// heads share 2 kv heads.
func kernelConfig() Config {
	return Config{ModelType: "qwen2", Vocab: 97, Hidden: 40, Intermediate: 52, Layers: 2, Heads: 4, KVHeads: 2,
		HeadDim: 16, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 256}
}

// kernelConfigs are the models the decode tests run on: kernelConfig, one
// with head_dim 64, where attention takes bf16 cache rows by pairs (an even
// number of 16-column chunks) and 3 query heads share a kv head, one with
// head_dim 48 (an odd number of chunks: widened one chunk at a time), and
// a Qwen3 (q/k norms, no biases, head_dim 32 with hidden / heads 10), a
// Qwen2 with yarn RoPE (its attention factor 1.139 scales cos and sin) and
// a tied Llama with llama3 RoPE scaling.
func kernelConfigs() map[string]Config {
	hd64 := kernelConfig()
	hd64.Hidden, hd64.Heads, hd64.KVHeads, hd64.HeadDim = 72, 6, 2, 64
	hd48 := kernelConfig()
	hd48.Heads, hd48.KVHeads, hd48.HeadDim = 2, 1, 48
	yarn := kernelConfig()
	yarn.Rope = RoPE{Type: "yarn", Factor: 4, OriginalMaxPositions: 32}
	llama3 := kernelConfig()
	llama3.ModelType, llama3.TieEmbeddings, llama3.RopeTheta = "llama", true, 500000
	llama3.Rope = RoPE{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 64}
	return map[string]Config{"head_dim 16": kernelConfig(), "head_dim 64": hd64, "head_dim 48": hd48,
		"qwen3": qwen3Config(), "yarn": yarn, "llama3": llama3}
}

// editParams rewrites, in place, the values of every parameter whose name
// has one of the suffixes: edit gets the parameter's index among the
// model's names and its values (f32).
func editParams(t *testing.T, m *Model, suffixes []string, edit func(k int, vals []float32)) {
	t.Helper()
	for k, name := range m.Names() {
		match := false
		for _, suf := range suffixes {
			match = match || strings.HasSuffix(name, suf)
		}
		if !match {
			continue
		}
		p, err := m.Param(name)
		if err != nil {
			t.Fatal(err)
		}
		shape, _ := p.Shape()
		vals, err := p.Float32s()
		p.Free()
		if err != nil {
			t.Fatal(err)
		}
		edit(k, vals)
		w, _ := FromFloat32(vals, shape...)
		err = m.SetParam(name, w)
		w.Free()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// withBiases gives the q/k/v biases (zero when drawn) nonzero values, so
// that the tests see whether a path adds them.
func withBiases(t *testing.T, m *Model) {
	t.Helper()
	editParams(t, m, []string{".bias"}, func(k int, vals []float32) {
		for i := range vals {
			vals[i] = float32(0.3 * math.Sin(float64(7*k+i)))
		}
	})
}

// sharpenAttention multiplies the q and k projections by factor, so that
// attention is peaked rather than nearly uniform (as at 0.02 init, where
// scores barely matter) and a wrong score moves the logits.
func sharpenAttention(t *testing.T, m *Model, factor float32) {
	t.Helper()
	editParams(t, m, []string{"q_proj.weight", "k_proj.weight"}, func(_ int, vals []float32) {
		for i := range vals {
			vals[i] *= factor
		}
	})
}

// newEngineOn makes an engine on path, or fails the test.
func newEngineOn(t *testing.T, m *Model, slots int, p DecodePath) *Engine {
	t.Helper()
	e, err := NewEngine(m, slots, 128)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetDecodePath(p); err != nil {
		e.Free()
		t.Fatal(err)
	}
	return e
}

// kernelsOrSkip skips a test on machines where the hand-written step cannot
// run (neither AVX-512 nor AVX2, or not the instruction set
// AGENTRL_CPU_KERNELS asks for), saying why. Where it runs, it is the set
// asked for.
func kernelsOrSkip(t *testing.T, m *Model) {
	t.Helper()
	e, err := NewEngine(m, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Free()
	d, err := e.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if d.Path != DecodeKernels {
		t.Skipf("the decode kernels do not run here: %s", d.Why)
	}
	if want := os.Getenv("AGENTRL_CPU_KERNELS"); (want == "avx512" || want == "avx2") && d.ISA != want {
		t.Fatalf("AGENTRL_CPU_KERNELS=%s, but the engine runs the %s kernels", want, d.ISA)
	}
}

// kernelISAs are the instruction sets of the hand-written kernels, each
// forced by AGENTRL_CPU_KERNELS in the tests that run every one.
var kernelISAs = []string{"avx512", "avx2"}

// eachISA runs test as a subtest per instruction set of the kernels, with
// AGENTRL_CPU_KERNELS set to it (engines read it when they are made); on a
// CPU without that set, kernelsOrSkip skips it.
func eachISA(t *testing.T, test func(t *testing.T)) {
	for _, isa := range kernelISAs {
		t.Run(isa, func(t *testing.T) {
			t.Setenv("AGENTRL_CPU_KERNELS", isa)
			test(t)
		})
	}
}

func maxDiff32(a, b []float32) float64 {
	var d float64
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

// The three decode paths (hand-written kernels, fused libtorch, unfused
// libtorch as the training forward) agree step by step in f32: the same
// pending logits within 1e-5, the same sampled tokens, the same logprobs
// within 1e-5, and each equals the full pass. Six slots of different
// lengths decode together (input rows in groups of 4 and 2 on AVX-512, of
// 3 on AVX2), in an order that is not the slot order, at temperature 0.7
// and greedily. For the kernels of each instruction set.
func TestDecodePathsAgree(t *testing.T) {
	for name, cfg := range kernelConfigs() {
		t.Run(name, func(t *testing.T) { eachISA(t, func(t *testing.T) { decodePathsAgree(t, cfg) }) })
	}
}

func decodePathsAgree(t *testing.T, cfg Config) {
	m, err := NewRandomModel(cfg, Float32, CPU, false, 11)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	withBiases(t, m)
	spreadQKNorms(t, m)
	sharpenAttention(t, m, 12)
	kernelsOrSkip(t, m)
	paths := []DecodePath{DecodeKernels, DecodeFused, DecodeUnfused}
	engines := make([]*Engine, len(paths))
	for i, p := range paths {
		engines[i] = newEngineOn(t, m, 6, p)
		defer engines[i].Free()
	}
	const S = 6
	hist := make([][]int64, S)
	for s := range hist {
		hist[s] = seq(3+5*s, int64(s+1))
		for i, e := range engines {
			if err := e.Prefill(s, hist[s]); err != nil {
				t.Fatalf("%v prefill: %v", paths[i], err)
			}
			e.Seed(s, uint64(40+s))
		}
	}
	order := []int{4, 1, 5, 0, 3, 2}
	V := m.Config.Vocab
	var maxLogit, maxLogprob float64 // the kernels' largest differences from the full pass
	defer func() {
		t.Logf("kernels vs the full pass: logits within %.2g, logprobs within %.2g", maxLogit, maxLogprob)
	}()
	for step := 0; step < 8; step++ {
		samp := Sampling{Temperature: 0.7}
		if step%3 == 2 {
			samp = Sampling{} // greedy
		}
		toks := make([][]int64, len(paths))
		lps := make([][]float32, len(paths))
		for i, e := range engines {
			toks[i], lps[i] = make([]int64, S), make([]float32, S)
			if err := e.Step(order, samp, toks[i], lps[i]); err != nil {
				t.Fatalf("step %d on %v: %v", step, paths[i], err)
			}
		}
		for j, s := range order {
			for i := 1; i < len(paths); i++ {
				if toks[i][j] != toks[0][j] || math.Abs(float64(lps[i][j]-lps[0][j])) > 1e-5 {
					t.Fatalf("step %d slot %d: %v drew %d (logprob %v), %v drew %d (logprob %v)",
						step, s, paths[0], toks[0][j], lps[0][j], paths[i], toks[i][j], lps[i][j])
				}
			}
			// The logprob is that of the token under the full pass, at
			// the sampling temperature (1 when greedy).
			row := fullLogits(t, m, hist[s])[(len(hist[s])-1)*V:]
			temp := samp.Temperature
			if temp <= 0 {
				temp = 1
			}
			scaled := make([]float32, V)
			for k := range row {
				scaled[k] = float32(float64(row[k]) / temp)
			}
			d := math.Abs(float64(lps[0][j]) - logSoftmaxAt(scaled, int(toks[0][j])))
			maxLogprob = math.Max(maxLogprob, d)
			if d > 1e-5 {
				t.Fatalf("step %d slot %d: kernels logprob %v, full pass %v", step, s, lps[0][j], logSoftmaxAt(scaled, int(toks[0][j])))
			}
			hist[s] = append(hist[s], toks[0][j])
		}
		for s := 0; s < S; s++ {
			want := fullLogits(t, m, hist[s])[(len(hist[s])-1)*V:]
			for i, e := range engines {
				got, err := e.PendingLogits(s)
				if err != nil {
					t.Fatal(err)
				}
				d := maxDiff32(got, want)
				if i == 0 {
					maxLogit = math.Max(maxLogit, d)
				}
				if d > 1e-5 {
					t.Fatalf("step %d slot %d: %v logits differ from the full pass by %g", step, s, paths[i], d)
				}
			}
		}
	}
}

// After the policy's weights change (an AdamW step on the policy, then the
// rollout copy refreshed with CopyWeightsFrom, as the trainer does before
// every rollout), every path decodes with the new weights: the fused
// path's concatenated copies must not go stale. They are rewritten once per
// change of the weights, not per step (the engine's Refreshes counter; the
// unfused path has none to rewrite), and every step counts as eager on the
// CPU. For a Qwen2 (with q/k/v biases) and a Qwen3 (with q/k norms).
func TestDecodeFollowsWeightUpdate(t *testing.T) {
	t.Run("qwen2", func(t *testing.T) { decodeFollowsWeightUpdate(t, kernelConfig()) })
	t.Run("qwen3", func(t *testing.T) { decodeFollowsWeightUpdate(t, qwen3Config()) })
}

func decodeFollowsWeightUpdate(t *testing.T, cfg Config) {
	policy, err := NewRandomModel(cfg, Float32, CPU, false, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer policy.Free()
	rollout, err := NewModel(cfg, Float32, CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rollout.Free()
	withBiases(t, policy)
	spreadQKNorms(t, policy)
	if err := rollout.CopyWeightsFrom(policy); err != nil {
		t.Fatal(err)
	}
	prompt := seq(7, 3)
	V := cfg.Vocab
	// Three engines over the rollout copy, one per path, and a fused one
	// over the policy itself, as the trainer's sampler decodes: its
	// weights change by the optimizer step alone (fused AdamW where
	// libtorch has it, which must move their version counters too).
	paths := []DecodePath{DecodeAuto, DecodeFused, DecodeUnfused, DecodeFused}
	engines := make([]*Engine, len(paths))
	for i, p := range paths {
		m := rollout
		if i == len(paths)-1 {
			m = policy
		}
		engines[i] = newEngineOn(t, m, 1, p)
		defer engines[i].Free()
	}
	// decode prefills the prompt afresh and takes two greedy steps; the
	// pending logits must be the full pass of the policy.
	decode := func(when string) {
		for i, e := range engines {
			if err := e.Release(0); err != nil {
				t.Fatal(err)
			}
			if err := e.Prefill(0, prompt); err != nil {
				t.Fatal(err)
			}
			hist := append([]int64(nil), prompt...)
			tok, lp := make([]int64, 1), make([]float32, 1)
			for k := 0; k < 2; k++ {
				if err := e.Step([]int{0}, Sampling{}, tok, lp); err != nil {
					t.Fatal(err)
				}
				hist = append(hist, tok[0])
			}
			got, _ := e.PendingLogits(0)
			want := fullLogits(t, policy, hist)[(len(hist)-1)*V:]
			if d := maxDiff32(got, want); d > 1e-5 {
				t.Errorf("%s: the %v engine is %g away from the policy's full pass", when, paths[i], d)
			}
		}
	}
	// counted checks the engines' counters: refreshes rewrites of the
	// fused weights (the fused path's only) and steps decode steps.
	counted := func(refreshes, steps int64) {
		t.Helper()
		for i, e := range engines {
			c, err := e.Counters()
			if err != nil {
				t.Fatal(err)
			}
			want := EngineCounters{EagerSteps: steps}
			if p, _, _ := e.DecodePath(); p == DecodeFused {
				want.Refreshes = refreshes
			}
			if c != want {
				t.Errorf("the %v engine: counters %+v, want %+v", paths[i], c, want)
			}
		}
	}
	decode("before the update")
	decode("again, with the same weights")
	counted(1, 4)
	// One AdamW step with a large learning rate on the summed logprobs of
	// a sequence: every weight moves.
	params, err := policy.Params()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, p := range params {
			p.Free()
		}
	}()
	opt, err := NewAdamW(params, nil, []AdamWGroup{{LR: 0.05, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Free()
	ids := seq(12, 9)
	pos, attn := make([]int64, 12), make([]int64, 12)
	for i := range pos {
		pos[i], attn[i] = int64(i), 1
	}
	s := NewScope()
	out, err := policy.Forward(Batch{B: 1, T: 12, IDs: ids, Attn: attn, Positions: pos}, ForwardOptions{Grad: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Own(out.LogProbs)
	if err := s.Sum(out.LogProbs).Backward(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	if err := rollout.CopyWeightsFrom(policy); err != nil {
		t.Fatal(err)
	}
	decode("after an AdamW step and CopyWeightsFrom")
	counted(2, 6)
	// SetParam (a checkpoint load) on one fused weight only.
	up, _ := policy.Param("model.layers.1.mlp.up_proj.weight")
	s = NewScope()
	scaled := s.MulScalar(up, 1.5)
	up.Free()
	if err := policy.SetParam("model.layers.1.mlp.up_proj.weight", scaled); err != nil {
		t.Fatal(err)
	}
	if err := rollout.SetParam("model.layers.1.mlp.up_proj.weight", scaled); err != nil {
		t.Fatal(err)
	}
	s.Close()
	decode("after SetParam of up_proj")
	counted(3, 8)
}

// A bf16 model decodes through the kernels (bf16 weights widened in
// registers, f32 activations) close to libtorch's bf16 path and to the f32
// model it was copied from: bf16 rounding, not a different function. For
// the kernels of each instruction set.
func TestDecodeKernelsBF16(t *testing.T) {
	for name, cfg := range kernelConfigs() {
		t.Run(name, func(t *testing.T) { eachISA(t, func(t *testing.T) { decodeKernelsBF16(t, cfg) }) })
	}
}

func decodeKernelsBF16(t *testing.T, cfg Config) {
	m32, err := NewRandomModel(cfg, Float32, CPU, false, 13)
	if err != nil {
		t.Fatal(err)
	}
	defer m32.Free()
	m16, err := NewModel(cfg, BFloat16, CPU, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m16.Free()
	withBiases(t, m32)
	spreadQKNorms(t, m32)
	sharpenAttention(t, m32, 12)
	if err := m16.CopyWeightsFrom(m32); err != nil {
		t.Fatal(err)
	}
	kernelsOrSkip(t, m16)
	// Four slots (one group of 4 input rows for the products), with
	// lengths on both sides of 16 and 32 (blocks of attention scores).
	ek := newEngineOn(t, m16, 4, DecodeKernels)
	defer ek.Free()
	hist := [][]int64{seq(6, 1), seq(14, 2), seq(30, 3), seq(40, 4)}
	for s, h := range hist {
		if err := ek.Prefill(s, h); err != nil {
			t.Fatal(err)
		}
	}
	V := cfg.Vocab
	tok, lp := make([]int64, 4), make([]float32, 4)
	var max32, max16 float64
	defer func() { t.Logf("bf16 kernels: within %.2g of the f32 model, %.2g of libtorch bf16", max32, max16) }()
	for step := 0; step < 4; step++ {
		if err := ek.Step([]int{0, 1, 2, 3}, Sampling{Temperature: 1}, tok, lp); err != nil {
			t.Fatal(err)
		}
		for s := range hist {
			hist[s] = append(hist[s], tok[s])
			got, _ := ek.PendingLogits(s)
			// libtorch's bf16 path on the same history (prefill runs it).
			eu := newEngineOn(t, m16, 1, DecodeUnfused)
			if err := eu.Prefill(0, hist[s]); err != nil {
				t.Fatal(err)
			}
			ref, _ := eu.PendingLogits(0)
			eu.Free()
			want := fullLogits(t, m32, hist[s])[(len(hist[s])-1)*V:]
			d32, d16 := maxDiff32(got, want), maxDiff32(got, ref)
			max32, max16 = math.Max(max32, d32), math.Max(max16, d16)
			if d32 == 0 || d32 > 0.05 || d16 > 0.05 {
				t.Errorf("step %d slot %d: bf16 kernels are %g from the f32 model and %g from libtorch bf16, want bf16 rounding (0 < d <= 0.05)",
					step, s, d32, d16)
			}
		}
	}
}

// The profile counts steps and attributes time to the phases; reset
// starts again. Kernels unavailable here is reported with a reason.
func TestDecodeProfileAndPath(t *testing.T) {
	m, err := NewRandomModel(kernelConfig(), Float32, CPU, false, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	e, err := NewEngine(m, 2, 32)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Free()
	e.Prefill(0, seq(4, 1))
	e.Prefill(1, seq(5, 2))
	tok, lp := make([]int64, 2), make([]float32, 2)
	for i := 0; i < 3; i++ {
		if err := e.Step([]int{0, 1}, Sampling{Temperature: 1}, tok, lp); err != nil {
			t.Fatal(err)
		}
	}
	p, err := e.Profile(true)
	if err != nil {
		t.Fatal(err)
	}
	if p.Steps != 3 || !(p.Products > 0) || !(p.Sampling > 0) || p.Attention < 0 || p.Other < 0 {
		t.Errorf("profile after 3 steps: %+v", p)
	}
	if p, _ := e.Profile(false); p.Steps != 0 || p.Total() != 0 {
		t.Errorf("profile after reset: %+v", p)
	}
	// Autocast turned on after the engine was made: the kernels do not
	// emulate it, so steps go to the fused path until it is off again.
	if p0, _, _ := e.DecodePath(); p0 == DecodeKernels {
		m.SetAutocast(true, BFloat16)
		if p, why, _ := e.DecodePath(); p != DecodeFused || !strings.Contains(why, "autocast") {
			t.Errorf("under autocast: path %v (%q), want fused because of autocast", p, why)
		}
		if err := e.SetDecodePath(DecodeKernels); err == nil {
			t.Error("kernels forced under autocast")
		}
		m.SetAutocast(false, BFloat16)
		if p, why, _ := e.DecodePath(); p != DecodeKernels || why != "" {
			t.Errorf("autocast off again: path %v (%q)", p, why)
		}
	}
	// A model the kernels cannot run (head_dim 8) says why and decodes fused.
	small, _ := NewRandomModel(tinyConfig(), Float32, CPU, false, 2)
	defer small.Free()
	e2, err := NewEngine(small, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Free()
	path, why, err := e2.DecodePath()
	if err != nil || path != DecodeFused || !strings.Contains(why, "head_dim") {
		t.Errorf("head_dim 8: path %v (%q, %v), want fused because of head_dim", path, why, err)
	}
	if err := e2.SetDecodePath(DecodeKernels); err == nil || !strings.Contains(err.Error(), "head_dim") {
		t.Errorf("forcing the kernels on head_dim 8: %v", err)
	}
	if err := e2.SetDecodePath(DecodePath(9)); err == nil {
		t.Error("decode path 9 accepted")
	}
}

// The kernels split products and attention between the calling thread and
// the decode pool's workers, each output row computed whole by one of
// them: on a model big enough for a worker to take part (products of about
// a millisecond), two threads decode bit for bit as one does, in f32 and in
// bf16, and the f32 logits match the unfused path. For the kernels of each
// instruction set.
func TestDecodeKernelsTwoThreads(t *testing.T) { eachISA(t, decodeKernelsTwoThreads) }

func decodeKernelsTwoThreads(t *testing.T) {
	cfg := Config{ModelType: "qwen2", Vocab: 8000, Hidden: 256, Intermediate: 704, Layers: 2, Heads: 6, KVHeads: 2,
		HeadDim: 64, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 256}
	old := Threads()
	defer func() {
		if err := SetThreads(old); err != nil {
			t.Error(err)
		}
	}()
	const S = 8
	// decode returns the pending logits of every slot after each of 3
	// steps on threads threads. Prefill (libtorch, whose sums depend on its
	// thread count) always runs on one.
	decode := func(m *Model, threads int, p DecodePath) [][]float32 {
		if err := SetThreads(1); err != nil {
			t.Fatal(err)
		}
		e := newEngineOn(t, m, S, p)
		defer e.Free()
		order := make([]int, S)
		for s := range order {
			order[s] = S - 1 - s
			if err := e.Prefill(s, seq(5+9*s, int64(s+1))); err != nil {
				t.Fatal(err)
			}
			e.Seed(s, uint64(70+s))
		}
		if err := SetThreads(threads); err != nil {
			t.Fatal(err)
		}
		var out [][]float32
		tok, lp := make([]int64, S), make([]float32, S)
		for step := 0; step < 3; step++ {
			if err := e.Step(order, Sampling{Temperature: 0.8}, tok, lp); err != nil {
				t.Fatal(err)
			}
			for s := 0; s < S; s++ {
				l, err := e.PendingLogits(s)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, l)
			}
		}
		return out
	}
	for _, dt := range []DType{Float32, BFloat16} {
		m, err := NewRandomModel(cfg, dt, CPU, false, 5)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Free()
		sharpenAttention(t, m, 12)
		kernelsOrSkip(t, m)
		one, two := decode(m, 1, DecodeKernels), decode(m, 2, DecodeKernels)
		for i := range one {
			if d := maxDiff32(one[i], two[i]); d != 0 {
				t.Fatalf("%v, step %d slot %d: two threads differ from one by %g", dt, i/S, i%S, d)
			}
		}
		if dt == Float32 {
			ref := decode(m, 2, DecodeUnfused)
			// Within 5e-5 of the largest logit magnitude (here 1.1 to 1.5):
			// the two paths sum in different orders, over rows of 256 and
			// 704 (TestDecodePathsAgree holds the tiny model to 1e-5; here
			// the differences reach 1.2e-5).
			var worst float64
			defer func() { t.Logf("f32 kernels vs the unfused path: within %.2g", worst) }()
			for i := range one {
				scale := 1.0
				for _, v := range ref[i] {
					scale = math.Max(scale, math.Abs(float64(v)))
				}
				d := maxDiff32(two[i], ref[i])
				worst = math.Max(worst, d)
				if d > 5e-5*scale {
					t.Fatalf("step %d slot %d: kernels differ from the unfused path by %g (largest logit %g)", i/S, i%S, d, scale)
				}
			}
		}
	}
}

// AGENTRL_CPU_KERNELS picks the hand-written kernels' instruction set when
// an engine is made: auto the best this CPU has (AVX-512 with F, BW, VL
// and DQ, else AVX2 with FMA, as /proc/cpuinfo lists the CPU's flags),
// avx512 and avx2 that set where the CPU has it, off none (libtorch's
// step, saying why). Engine.Decode and CPUDecode name the set. Any other
// value is refused, naming the variable, even for a model the kernels
// cannot run.
func TestCPUKernelsSetting(t *testing.T) {
	m, err := NewRandomModel(kernelConfig(), Float32, CPU, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	flags := cpuFlags(t)
	has := func(fs ...string) bool {
		for _, f := range fs {
			if !flags[f] {
				return false
			}
		}
		return true
	}
	// The sets this CPU has ("" where it lacks one), and the best of them.
	avx512, avx2 := "", ""
	if has("avx512f", "avx512bw", "avx512vl", "avx512dq") {
		avx512 = "avx512"
	}
	if has("avx2", "fma") {
		avx2 = "avx2"
	}
	best := avx512
	if best == "" {
		best = avx2
	}
	for _, c := range []struct {
		env, isa string // isa: the set wanted, "" for none
		why      string // in the reason when none
	}{
		{"", best, "the CPU has neither"},
		{"auto", best, "the CPU has neither"},
		{"avx512", avx512, "AGENTRL_CPU_KERNELS=avx512, but the CPU lacks"},
		{"avx2", avx2, "AGENTRL_CPU_KERNELS=avx2, but the CPU lacks"},
		{"off", "", "AGENTRL_CPU_KERNELS=off"},
	} {
		t.Run("env="+c.env, func(t *testing.T) {
			t.Setenv("AGENTRL_CPU_KERNELS", c.env)
			e, err := NewEngine(m, 1, 8)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Free()
			d, err := e.Decode()
			if err != nil {
				t.Fatal(err)
			}
			isa, why, err := CPUDecode(m.Config, Float32, false)
			if err != nil {
				t.Fatal(err)
			}
			if c.isa != "" {
				want := DecodeInfo{Path: DecodeKernels, ISA: c.isa}
				if d != want || d.String() != "kernels ("+c.isa+")" || isa != c.isa || why != "" {
					t.Errorf("engine %+v (%q), CPUDecode %q %q; want the %s kernels", d, d, isa, why, c.isa)
				}
				return
			}
			if d.Path != DecodeFused || d.ISA != "" || !strings.Contains(d.Why, c.why) || isa != "" || why != d.Why {
				t.Errorf("engine %+v, CPUDecode %q %q; want fused because %q", d, isa, why, c.why)
			}
			if err := e.SetDecodePath(DecodeKernels); err == nil || !strings.Contains(err.Error(), c.why) {
				t.Errorf("forcing the kernels: %v, want an error saying %q", err, c.why)
			}
		})
	}
	// A bad value: an error naming it, for a model the kernels run and for
	// one they cannot (head_dim 8).
	t.Setenv("AGENTRL_CPU_KERNELS", "avx3")
	small, err := NewRandomModel(tinyConfig(), Float32, CPU, false, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Free()
	for _, mm := range []*Model{m, small} {
		if e, err := NewEngine(mm, 1, 8); err == nil || !strings.Contains(err.Error(), "AGENTRL_CPU_KERNELS=avx3") {
			if e != nil {
				e.Free()
			}
			t.Errorf("head_dim %d: AGENTRL_CPU_KERNELS=avx3 gave %v, want an error naming it", mm.Config.HeadDim, err)
		}
	}
	if _, _, err := CPUDecode(m.Config, Float32, false); err == nil || !strings.Contains(err.Error(), "AGENTRL_CPU_KERNELS=avx3") {
		t.Errorf("CPUDecode under AGENTRL_CPU_KERNELS=avx3: %v, want an error naming it", err)
	}
}

// cpuFlags are the CPU's feature flags as Linux lists them in
// /proc/cpuinfo (the test skips elsewhere, or on a CPU that is not
// x86-64: there the kernels never run, which TestDecodeProfileAndPath
// covers).
func cpuFlags(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		t.Skipf("no /proc/cpuinfo: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "flags" {
			flags := map[string]bool{}
			for _, fl := range strings.Fields(v) {
				flags[fl] = true
			}
			return flags
		}
	}
	t.Skip("/proc/cpuinfo lists no x86 flags")
	return nil
}
