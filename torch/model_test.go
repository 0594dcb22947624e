package torch

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/fixtures"
	"github.com/agentrl/agentrl/internal/hubcache/hubcachetest"
	"github.com/agentrl/agentrl/torch/safetensors"
)

type fixtureCase struct {
	Name          string        `json:"name"`
	Kind          string        `json:"kind"`
	InputIDs      [][]int64     `json:"input_ids"`
	AttentionMask [][]int64     `json:"attention_mask"`
	PositionIDs   [][]int64     `json:"position_ids"`
	Logits        [][][]float64 `json:"logits"`
	LogitsF32     [][][]float64 `json:"logits_f32"` // transformers' float32 forward's (hfModel.Ref32)
	PrefixIDs     [][]int64     `json:"prefix_ids"`
	PrefillLast   [][]float64   `json:"prefill_last_logits"`
	PrefillLast32 [][]float64   `json:"prefill_last_logits_f32"` // transformers' float32 (hfModel.Ref32)
	FirstTokens   []int64       `json:"first_token_ids"`
	Steps         []struct {
		InputIDs    []int64     `json:"input_ids"`
		PositionIDs []int64     `json:"position_ids"`
		Logits      [][]float64 `json:"logits"`
		LogitsF32   [][]float64 `json:"logits_f32"` // transformers' float32 (hfModel.Ref32)
		NextTokens  []int64     `json:"next_token_ids"`
	} `json:"steps"`
	Generated [][]int64 `json:"generated_ids"`
}

// fixtureDir is the folder $env names when it is set, else the shared
// fixture called name (the test skips, saying so, when that is absent).
func fixtureDir(t *testing.T, env, name string) string {
	if d := os.Getenv(env); d != "" {
		return d
	}
	return fixtures.Path(t, "fixtures", name)
}

func loadCases(t *testing.T, dir string) []fixtureCase {
	b, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []fixtureCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f.Cases
}

func flat(rows [][]int64) []int64 {
	var out []int64
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

func maxDiff(got []float32, want []float64) float64 {
	var m float64
	for i := range want {
		m = math.Max(m, math.Abs(float64(got[i])-want[i]))
	}
	return m
}

// The Qwen2 fixture ($AGENTRL_QWEN2_FIXTURE, or the shared qwen2-tiny-a):
// see fixtureParity.
func TestQwen2FixtureParity(t *testing.T) {
	fixtureParity(t, fixtureDir(t, "AGENTRL_QWEN2_FIXTURE", "qwen2-tiny-a"))
}

// fixtureParity holds the model in dir to the float64 reference of its
// cases.json, within 1e-4 everywhere: the full-sequence logits at every
// position of every full case (padding included), the training forward's
// logprobs of each real next token, and greedy decoding through the
// KV-cache engine on every decode path (prefill logits, every step's
// logits, and the tokens). It logs the largest difference of each and
// returns them by check (logits, forward, and each path's name; a path
// that cannot run here is absent). It runs on $AGENTRL_TEST_DEVICE (the
// CPU by default; see parityDevice).
func fixtureParity(t *testing.T, dir string) map[string]float64 {
	dev := parityDevice(t)
	t.Logf("%s on %s", dir, dev)
	m, err := LoadModel(dir, Float32, dev, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	cases := loadCases(t, dir)
	var full, decode []fixtureCase
	for _, c := range cases {
		switch c.Kind {
		case "full":
			full = append(full, c)
		case "decode":
			decode = append(decode, c)
		}
	}
	if len(full) == 0 || len(decode) == 0 {
		t.Fatalf("%s: %d full and %d decode cases, want some of each", dir, len(full), len(decode))
	}
	worst := map[string]float64{}
	note := func(check, name string, d float64) {
		t.Logf("%s: max |diff| %.2e", name, d)
		worst[check] = math.Max(worst[check], d)
	}
	t.Run("logits", func(t *testing.T) {
		for _, c := range full {
			note("logits", c.Name, fullCaseLogits(t, m, c))
		}
	})
	t.Run("forward", func(t *testing.T) {
		for _, c := range full {
			note("forward", c.Name+" (logprobs)", fullCaseLogprobs(t, m, c))
		}
	})
	for _, p := range []DecodePath{DecodeKernels, DecodeFused, DecodeUnfused} {
		t.Run(p.String(), func(t *testing.T) {
			if p == DecodeKernels {
				kernelsOrSkip(t, m)
			}
			for _, c := range decode {
				note(p.String(), c.Name, testDecodeCase(t, m, c, p))
			}
		})
	}
	// The path attention takes on CUDA: query heads grouped by their key
	// head as [B,kv,g*T,hd] with the mask repeated for the g heads of a
	// group, through libtorch's scaled_dot_product_attention (plain ops
	// before libtorch 2.5), held to the same reference.
	t.Run("sdpa", func(t *testing.T) {
		if err := m.SetAttention(AttentionSDPA); err != nil {
			t.Fatal(err)
		}
		defer m.SetAttention(AttentionAuto)
		for _, c := range full {
			t.Logf("%s: max |diff| of logits %.2e, of logprobs %.2e", c.Name, fullCaseLogits(t, m, c), fullCaseLogprobs(t, m, c))
		}
		for _, p := range []DecodePath{DecodeFused, DecodeUnfused} {
			for _, c := range decode {
				t.Logf("%s (%s): max |diff| %.2e", c.Name, p, testDecodeCase(t, m, c, p))
			}
		}
		backend, err := m.SDPABackend()
		if err != nil {
			t.Fatal(err)
		}
		compiled, _ := Version()
		var major, minor int
		fmt.Sscanf(compiled, "%d.%d", &major, &minor)
		if sdpa := major > 2 || major == 2 && minor >= 5; sdpa != (backend != "") {
			t.Errorf("libtorch %s: SDPA backend %q reported", compiled, backend)
		}
		t.Logf("libtorch %s: SDPA backend %q", compiled, backend)
	})
	return worst
}

// caseLogits runs a full case's batch through the model's forward and
// returns its logits, [B*T*V] as float32.
func caseLogits(t *testing.T, m *Model, c fixtureCase) []float32 {
	t.Helper()
	B, T := len(c.InputIDs), len(c.InputIDs[0])
	lt, err := m.Logits(Batch{B: B, T: T, IDs: flat(c.InputIDs), Attn: flat(c.AttentionMask), Positions: flat(c.PositionIDs)})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Free()
	got, err := lt.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// caseLogprobs runs a full case's batch through the training forward
// (with the autograd graph) and returns each position's log-probability
// of the next token, [B*T] as float32.
func caseLogprobs(t *testing.T, m *Model, c fixtureCase) []float32 {
	t.Helper()
	B, T := len(c.InputIDs), len(c.InputIDs[0])
	out, err := m.Forward(Batch{B: B, T: T, IDs: flat(c.InputIDs), Attn: flat(c.AttentionMask), Positions: flat(c.PositionIDs)},
		ForwardOptions{Grad: true})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Free()
	got, err := out.LogProbs.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// fullCaseLogits compares the full-sequence logits of a full case with the
// fixture's and returns the largest difference.
func fullCaseLogits(t *testing.T, m *Model, c fixtureCase) float64 {
	V := m.Config.Vocab
	B, T := len(c.InputIDs), len(c.InputIDs[0])
	got := caseLogits(t, m, c)
	worst := 0.0
	for b := 0; b < B; b++ {
		for p := 0; p < T; p++ {
			d := maxDiff(got[(b*T+p)*V:(b*T+p+1)*V], c.Logits[b][p])
			worst = math.Max(worst, d)
			if d > 1e-4 {
				t.Fatalf("%s: row %d pos %d (mask %d): max |diff| %g > 1e-4", c.Name, b, p, c.AttentionMask[b][p], d)
			}
		}
	}
	return worst
}

// fullCaseLogprobs compares the training forward's logprob of each real
// next token (position t and t+1 both unpadded) with log softmax of the
// fixture's logits, computed here in float64, and returns the largest
// difference. The forward runs with the autograd graph and activation
// checkpointing, as in training.
func fullCaseLogprobs(t *testing.T, m *Model, c fixtureCase) float64 {
	B, T := len(c.InputIDs), len(c.InputIDs[0])
	if err := m.SetCheckpointing(true); err != nil {
		t.Fatal(err)
	}
	defer m.SetCheckpointing(false)
	got := caseLogprobs(t, m, c)
	worst := 0.0
	for b := 0; b < B; b++ {
		for p := 0; p+1 < T; p++ {
			if c.AttentionMask[b][p] == 0 || c.AttentionMask[b][p+1] == 0 {
				continue
			}
			row := c.Logits[b][p]
			mx := math.Inf(-1)
			for _, v := range row {
				mx = math.Max(mx, v)
			}
			var z float64
			for _, v := range row {
				z += math.Exp(v - mx)
			}
			want := row[c.InputIDs[b][p+1]] - mx - math.Log(z)
			d := math.Abs(float64(got[b*(T-1)+p]) - want)
			worst = math.Max(worst, d)
			if d > 1e-4 {
				t.Fatalf("%s: row %d pos %d: logprob %v, fixture %v", c.Name, b, p, got[b*(T-1)+p], want)
			}
		}
	}
	return worst
}

// testDecodeCase runs a greedy decode case through the KV-cache engine on
// path: prefill logits, every step's logits, and the tokens. It returns
// the largest logit difference.
func testDecodeCase(t *testing.T, m *Model, c fixtureCase, path DecodePath) float64 {
	return decodeCase(t, m, c, path, false)
}

// decodeCase is testDecodeCase with each row prefilled alone (Prefill), or
// with batched set, all rows in two batched prefills (PrefillBatch): each
// row's first half (at least one token), then the rest of the rows longer
// than one, so that the second continues slots of different lengths.
func decodeCase(t *testing.T, m *Model, c fixtureCase, path DecodePath, batched bool) float64 {
	return decodeCaseWithin(t, m, c, path, batched, 1e-4)
}

// decodeCaseWithin is decodeCase holding the logits within tol.
func decodeCaseWithin(t *testing.T, m *Model, c fixtureCase, path DecodePath, batched bool, tol float64) float64 {
	B := len(c.PrefixIDs)
	e := newEngineOn(t, m, B+1, path)
	defer e.Free()
	worst := 0.0
	// Slot b+1 holds row b, so the step exercises the non-contiguous path too.
	slots := make([]int, B)
	for b := 0; b < B; b++ {
		slots[b] = b + 1
	}
	if batched {
		var first, rest [][]int64
		var restSlots []int
		for b, p := range c.PrefixIDs {
			h := max(1, len(p)/2)
			first = append(first, p[:h])
			if h < len(p) {
				rest, restSlots = append(rest, p[h:]), append(restSlots, slots[b])
			}
		}
		if err := e.PrefillBatch(slots, first); err != nil {
			t.Fatal(err)
		}
		if len(rest) > 0 {
			if err := e.PrefillBatch(restSlots, rest); err != nil {
				t.Fatal(err)
			}
		}
	}
	for b := 0; b < B; b++ {
		if !batched {
			if err := e.Prefill(b+1, c.PrefixIDs[b]); err != nil {
				t.Fatal(err)
			}
		}
		l, _ := e.PendingLogits(b + 1)
		d := maxDiff(l, c.PrefillLast[b])
		worst = math.Max(worst, d)
		if d > tol {
			t.Fatalf("%s: prefill logits of row %d differ by %g", c.Name, b, d)
		}
	}
	toks := make([]int64, B)
	lps := make([]float32, B)
	gen := make([][]int64, B)
	for step := 0; step <= len(c.Steps); step++ {
		if err := e.Step(slots, Sampling{}, toks, lps); err != nil {
			t.Fatal(err)
		}
		for b := 0; b < B; b++ {
			gen[b] = append(gen[b], toks[b])
		}
		if step == len(c.Steps) {
			break
		}
		st := c.Steps[step]
		for b := 0; b < B; b++ {
			if toks[b] != st.InputIDs[b] {
				t.Fatalf("%s step %d row %d: token %d, fixture %d", c.Name, step, b, toks[b], st.InputIDs[b])
			}
			l, _ := e.PendingLogits(slots[b])
			d := maxDiff(l, st.Logits[b])
			worst = math.Max(worst, d)
			if d > tol {
				t.Fatalf("%s step %d row %d: logits differ by %g", c.Name, step, b, d)
			}
		}
	}
	for b := 0; b < B; b++ {
		for i, tok := range c.Generated[b] {
			if gen[b][i] != tok {
				t.Fatalf("%s row %d: generated %v, fixture %v", c.Name, b, gen[b], c.Generated[b])
			}
		}
	}
	return worst
}

func tinyConfig() Config {
	return Config{ModelType: "qwen2", Vocab: 97, Hidden: 32, Intermediate: 48, Layers: 2, Heads: 4, KVHeads: 2,
		HeadDim: 8, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 256}
}

func seq(n int, seed int64) []int64 {
	out := make([]int64, n)
	x := seed
	for i := range out {
		x = (x*1103515245 + 12345) % 2147483648
		out[i] = x % 97
	}
	return out
}

func fullLogits(t *testing.T, m *Model, ids []int64) []float32 {
	T := len(ids)
	pos := make([]int64, T)
	attn := make([]int64, T)
	for i := range pos {
		pos[i], attn[i] = int64(i), 1
	}
	lt, err := m.Logits(Batch{B: 1, T: T, IDs: ids, Attn: attn, Positions: pos})
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Free()
	v, _ := lt.Float32s()
	return v
}

// Incremental decoding through the cache equals the full pass (1e-5),
// with slots of different lengths decoding together, an observation
// prefilled mid-sequence, and a released slot reused: on the tiny model
// (head_dim 8: the fused libtorch path), on one the hand-written kernels
// run (head_dim 16), and on a Qwen3 (kernels, q/k norms).
func TestEngineMatchesFullPass(t *testing.T) {
	t.Run("tiny", func(t *testing.T) { testEngineMatchesFullPass(t, tinyConfig()) })
	t.Run("kernels", func(t *testing.T) { testEngineMatchesFullPass(t, kernelConfig()) })
	t.Run("qwen3", func(t *testing.T) { testEngineMatchesFullPass(t, qwen3Config()) })
}

func testEngineMatchesFullPass(t *testing.T, cfg Config) {
	m, err := NewRandomModel(cfg, Float32, CPU, false, 7)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	V := m.Config.Vocab
	e, err := NewEngine(m, 3, 128)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Free()
	hist := map[int][]int64{0: seq(5, 1), 1: seq(17, 2), 2: seq(9, 3)}
	for s, ids := range hist {
		if err := e.Prefill(s, ids); err != nil {
			t.Fatal(err)
		}
	}
	samp := Sampling{Temperature: 1, TopK: 0, TopP: 1}
	for s := 0; s < 3; s++ {
		e.Seed(s, uint64(100+s))
	}
	toks := make([]int64, 3)
	lps := make([]float32, 3)
	verify := func(when string) {
		for s, ids := range hist {
			got, _ := e.PendingLogits(s)
			full := fullLogits(t, m, ids)
			want := full[(len(ids)-1)*V:]
			var d float64
			for i := range want {
				d = math.Max(d, math.Abs(float64(got[i]-want[i])))
			}
			if d > 1e-5 {
				t.Fatalf("%s: slot %d (len %d) cache logits differ from the full pass by %g", when, s, len(ids), d)
			}
		}
	}
	for step := 0; step < 6; step++ {
		if err := e.Step([]int{0, 1, 2}, samp, toks, lps); err != nil {
			t.Fatal(err)
		}
		for s := 0; s < 3; s++ {
			// the recorded logprob is log softmax(logits)[tok] of the
			// logits the token was drawn from: check it from a full pass
			full := fullLogits(t, m, hist[s])
			row := full[(len(hist[s])-1)*V:]
			if d := math.Abs(float64(lps[s]) - logSoftmaxAt(row, int(toks[s]))); d > 1e-5 {
				t.Fatalf("step %d slot %d: logprob %v vs direct %v", step, s, lps[s], logSoftmaxAt(row, int(toks[s])))
			}
			hist[s] = append(hist[s], toks[s])
		}
		verify("decode")
	}
	// An observation appended to slot 1 mid-trajectory, then only slots 1, 2 step.
	obs := seq(4, 9)
	if err := e.Prefill(1, obs); err != nil {
		t.Fatal(err)
	}
	hist[1] = append(hist[1], obs...)
	if err := e.Step([]int{2, 1}, samp, toks, lps); err != nil {
		t.Fatal(err)
	}
	hist[2] = append(hist[2], toks[0])
	hist[1] = append(hist[1], toks[1])
	verify("observation")
	// Release slot 0 and reuse it for a new sequence.
	if err := e.Release(0); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.Len(0); n != 0 {
		t.Fatalf("released slot has length %d", n)
	}
	if err := e.Step([]int{0}, samp, toks, lps); err == nil {
		t.Fatal("step of a released slot succeeded")
	}
	hist[0] = seq(3, 4)
	if err := e.Prefill(0, hist[0]); err != nil {
		t.Fatal(err)
	}
	if err := e.Step([]int{0, 1, 2}, samp, toks, lps); err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 3; s++ {
		hist[s] = append(hist[s], toks[s])
	}
	verify("reuse")
	// CopySlot: slot 2 becomes a copy of slot 1 and continues identically
	// under the same seed.
	if err := e.CopySlot(1, 2); err != nil {
		t.Fatal(err)
	}
	e.Seed(1, 5)
	e.Seed(2, 5)
	if err := e.Step([]int{1, 2}, samp, toks, lps); err != nil {
		t.Fatal(err)
	}
	if toks[0] != toks[1] || lps[0] != lps[1] {
		t.Fatalf("copied slots diverged: %v %v", toks, lps)
	}
	if err := e.Prefill(0, make([]int64, 200)); err == nil || !strings.Contains(err.Error(), "exceed") {
		t.Fatalf("overflowing the cache: %v", err)
	}
}

func logSoftmaxAt(row []float32, k int) float64 {
	mx := math.Inf(-1)
	for _, v := range row {
		mx = math.Max(mx, float64(v))
	}
	var z float64
	for _, v := range row {
		z += math.Exp(float64(v) - mx)
	}
	return float64(row[k]) - mx - math.Log(z)
}

// Seeded sampling: the same seed gives the same tokens; top-k 1 is greedy.
func TestSamplingSeeded(t *testing.T) {
	m, _ := NewRandomModel(tinyConfig(), Float32, CPU, false, 3)
	defer m.Free()
	run := func(seed uint64, s Sampling) []int64 {
		e, _ := NewEngine(m, 1, 64)
		defer e.Free()
		e.Prefill(0, seq(4, 1))
		e.Seed(0, seed)
		var out []int64
		tok, lp := make([]int64, 1), make([]float32, 1)
		for i := 0; i < 20; i++ {
			if err := e.Step([]int{0}, s, tok, lp); err != nil {
				t.Fatal(err)
			}
			out = append(out, tok[0])
		}
		return out
	}
	hot := Sampling{Temperature: 2}
	a, b, c := run(1, hot), run(1, hot), run(2, hot)
	if !slices.Equal(a, b) {
		t.Fatalf("same seed, different tokens: %v %v", a, b)
	}
	if slices.Equal(a, c) {
		t.Fatalf("different seeds gave identical 20-token samples at temperature 2: %v", a)
	}
	if g, k1 := run(1, Sampling{}), run(9, Sampling{Temperature: 1, TopK: 1}); !slices.Equal(g, k1) {
		t.Fatalf("top-k 1 differs from greedy: %v %v", g, k1)
	}
	if g, p := run(1, Sampling{}), run(9, Sampling{Temperature: 1, TopP: 1e-9}); !slices.Equal(g, p) {
		t.Fatalf("top-p ~0 differs from greedy: %v %v", g, p)
	}
}

// The training forward's logprobs and entropies against a direct
// computation from the full logits, at temperature 0.7, and the gradient of
// a sum of selected logprobs against finite differences in one weight.
func TestForwardLogprobsEntropyAndGradient(t *testing.T) {
	cfg := tinyConfig()
	m, _ := NewRandomModel(cfg, Float32, CPU, true, 11)
	defer m.Free()
	V := cfg.Vocab
	ids := seq(7, 5)
	T := len(ids)
	pos := []int64{0, 1, 2, 3, 4, 5, 6}
	attn := []int64{1, 1, 1, 1, 1, 1, 1}
	b := Batch{B: 1, T: T, IDs: ids, Attn: attn, Positions: pos}
	const temp = 0.7
	out, err := m.Forward(b, ForwardOptions{Temperature: temp, Entropy: true, Values: true})
	if err != nil {
		t.Fatal(err)
	}
	lp, _ := out.LogProbs.Float32s()
	ent, _ := out.Entropy.Float32s()
	vals, _ := out.Values.Float32s()
	out.Free()
	if len(lp) != T-1 || len(vals) != T-1 {
		t.Fatalf("shapes: %d logprobs, %d values for T=%d", len(lp), len(vals), T)
	}
	full := fullLogits(t, m, ids)
	for p := 0; p < T-1; p++ {
		row := make([]float32, V)
		for i := range row {
			row[i] = full[p*V+i] / temp
		}
		if d := math.Abs(float64(lp[p]) - logSoftmaxAt(row, int(ids[p+1]))); d > 1e-5 {
			t.Fatalf("logprob at %d: %v vs %v", p, lp[p], logSoftmaxAt(row, int(ids[p+1])))
		}
		var h float64
		for k := range row {
			l := logSoftmaxAt(row, k)
			h -= math.Exp(l) * l
		}
		if d := math.Abs(float64(ent[p]) - h); d > 1e-4 {
			t.Fatalf("entropy at %d: %v vs %v", p, ent[p], h)
		}
	}

	// Gradient of S = sum_t logprob_t w.r.t. one element of an MLP weight,
	// against central differences in float64 arithmetic on float32 weights.
	objective := func() float64 {
		o, err := m.Forward(b, ForwardOptions{Temperature: temp})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Free()
		v, _ := o.LogProbs.Float64s()
		var s float64
		for _, x := range v {
			s += x
		}
		return s
	}
	s := NewScope()
	defer s.Close()
	o, err := m.Forward(b, ForwardOptions{Temperature: temp, Grad: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Own(o.LogProbs)
	if err := s.Sum(o.LogProbs).Backward(); err != nil {
		t.Fatal(err)
	}
	const name = "model.layers.1.mlp.up_proj.weight"
	w := s.Adopt(m.Param(name))
	g := s.Adopt(w.Grad())
	gv, _ := g.Float32s()
	wv, _ := w.Float32s()
	shape, _ := w.Shape()
	for _, idx := range []int{3, 100, 777} {
		const h = 1e-2
		orig := wv[idx]
		set := func(x float32) {
			wv[idx] = x
			nt, _ := FromFloat32(wv, shape...)
			if err := m.SetParam(name, nt); err != nil {
				t.Fatal(err)
			}
			nt.Free()
		}
		set(orig + h)
		up := objective()
		set(orig - h)
		dn := objective()
		set(orig)
		fd := (up - dn) / (2 * h)
		if math.Abs(fd-float64(gv[idx])) > 2e-3*math.Max(1, math.Abs(fd)) {
			t.Fatalf("d S / d %s[%d] = %v, finite difference %v", name, idx, gv[idx], fd)
		}
	}
}

// Save -> load is bit-identical; a removed tensor and a wrong shape are
// errors naming the tensor.
func TestSaveLoadRoundTrip(t *testing.T) {
	m, _ := NewRandomModel(tinyConfig(), Float32, CPU, true, 21)
	defer m.Free()
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	back, err := LoadModel(dir, Float32, CPU, true)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Free()
	sameWeights(t, m, back)
	// Remove one tensor / change one shape and save the file again.
	r, err := safetensors.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var keep, bad []safetensors.Tensor
	for _, n := range r.Names() {
		info, _ := r.Info(n)
		data, _ := r.Bytes(n)
		st := safetensors.Tensor{Name: n, DType: info.DType, Shape: info.Shape, Data: data}
		if n != "model.layers.1.self_attn.k_proj.weight" {
			keep = append(keep, st)
		}
		if n == "model.norm.weight" {
			st.Shape = []int64{2, st.Shape[0] / 2}
		}
		bad = append(bad, st)
	}
	r.Close()
	missing := t.TempDir()
	copyFile(t, filepath.Join(dir, "config.json"), filepath.Join(missing, "config.json"))
	safetensors.Write(filepath.Join(missing, "model.safetensors"), keep, nil)
	if _, err := LoadModel(missing, Float32, CPU, false); err == nil || !strings.Contains(err.Error(), "model.layers.1.self_attn.k_proj.weight") {
		t.Fatalf("missing tensor: %v", err)
	}
	shaped := t.TempDir()
	copyFile(t, filepath.Join(dir, "config.json"), filepath.Join(shaped, "config.json"))
	safetensors.Write(filepath.Join(shaped, "model.safetensors"), bad, nil)
	if _, err := LoadModel(shaped, Float32, CPU, false); err == nil || !strings.Contains(err.Error(), "model.norm.weight") {
		t.Fatalf("wrong shape: %v", err)
	}
}

// TestSaveHoldsOneTensor: Save copies each tensor out of libtorch as it is
// written, so the Go memory it allocates is the largest tensor's bytes
// (the embedding's 4 MiB), the file writer's 1 MiB buffer and small
// change, not the model's 32 MiB. A 0.5B model's checkpoint held 1.98 GB more than its
// update when the weights were copied out whole first.
func TestSaveHoldsOneTensor(t *testing.T) {
	cfg := Config{ModelType: "qwen2", Vocab: 4096, Hidden: 256, Intermediate: 512, Layers: 12, Heads: 8, KVHeads: 2,
		HeadDim: 32, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 256, TieEmbeddings: true}
	m, err := NewRandomModel(cfg, Float32, CPU, true, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	var total, largest int64
	for _, n := range m.Names() {
		p, _ := m.Param(n)
		s, _ := p.Shape()
		p.Free()
		total, largest = total+4*numel(s), max(largest, 4*numel(s))
	}
	dir := t.TempDir()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := int64(after.TotalAlloc - before.TotalAlloc); got > largest+3<<20 {
		t.Errorf("Save allocated %d bytes in Go for a model of %d bytes: want its largest tensor's %d, the writer's 1 MiB and small change", got, total, largest)
	}
	back, err := LoadModel(dir, Float32, CPU, true)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Free()
	sameWeights(t, m, back)
}

func copyFile(t *testing.T, from, to string) {
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(to, b, 0o644)
}

func TestConfigErrorsNameTheField(t *testing.T) {
	cases := map[string]string{
		`{"model_type":"gpt2","vocab_size":1}`: "model_type",
		`{"model_type":"qwen2","vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":0,"num_attention_heads":2}`:                                           "num_hidden_layers",
		`{"model_type":"llama","vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":3}`:                   "num_key_value_heads",
		`{"model_type":"qwen2","vocab_size":8,"hidden_size":8,"intermediate_size":8,"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":2,"rms_norm_eps":-1}`: "rms_norm_eps",
		`{"model_type":"llama","rope_scaling":{"type":"llama3"}}`: "rope_scaling",
	}
	for js, field := range cases {
		if _, err := ParseConfig([]byte(js), "config.json"); err == nil || !strings.Contains(err.Error(), field) {
			t.Fatalf("%s: error %v does not name %s", js, err, field)
		}
	}
}

// Activation checkpointing changes memory, not math: the gradients of every
// parameter equal those without it, for a Qwen2 (q/k/v biases) and a
// Qwen3 (q/k norms).
func TestCheckpointingSameGradients(t *testing.T) {
	t.Run("qwen2", func(t *testing.T) { checkpointingSameGradients(t, tinyConfig()) })
	t.Run("qwen3", func(t *testing.T) { checkpointingSameGradients(t, qwen3Config()) })
}

func checkpointingSameGradients(t *testing.T, cfg Config) {
	m, _ := NewRandomModel(cfg, Float32, CPU, true, 13)
	defer m.Free()
	ids := seq(9, 3)
	b := Batch{B: 1, T: 9, IDs: ids, Attn: []int64{1, 1, 1, 1, 1, 1, 1, 1, 1}, Positions: []int64{0, 1, 2, 3, 4, 5, 6, 7, 8}}
	grads := func(ckpt bool) map[string][]float32 {
		if err := m.SetCheckpointing(ckpt); err != nil {
			t.Fatal(err)
		}
		s := NewScope()
		defer s.Close()
		o, err := m.Forward(b, ForwardOptions{Grad: true, Values: true, Entropy: true})
		if err != nil {
			t.Fatal(err)
		}
		s.Own(o.LogProbs, o.Values, o.Entropy)
		loss := s.Add(s.Add(s.Sum(o.LogProbs), s.Sum(o.Values)), s.Sum(o.Entropy))
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		out := map[string][]float32{}
		for _, n := range m.Names() {
			p := s.Adopt(m.Param(n))
			g := s.Adopt(p.Grad())
			if g == nil {
				t.Fatalf("%s has no gradient (checkpointing %v)", n, ckpt)
			}
			out[n], _ = g.Float32s()
			p.ZeroGrad()
		}
		return out
	}
	plain, ck := grads(false), grads(true)
	for n, g := range plain {
		for i := range g {
			if math.Abs(float64(g[i]-ck[n][i])) > 1e-6 {
				t.Fatalf("%s[%d]: %v without checkpointing, %v with", n, i, g[i], ck[n][i])
			}
		}
	}
}

// Autocast (run here on the CPU; on CUDA the same code selects the CUDA
// autocast state) computes the forward in bf16 while the weights stay
// f32: log-probabilities move by bf16 rounding, not more; gradients reach
// the f32 weights; with checkpointing the backward recomputes each layer
// under autocast too, so its gradients equal the plain autocast ones; the
// decode engine samples under the same autocast, so its log-probabilities
// match the autocast training forward. For a Qwen2 and a Qwen3.
func TestAutocast(t *testing.T) {
	t.Run("qwen2", func(t *testing.T) { testAutocast(t, tinyConfig()) })
	t.Run("qwen3", func(t *testing.T) { testAutocast(t, qwen3Config()) })
}

func testAutocast(t *testing.T, cfg Config) {
	m, _ := NewRandomModel(cfg, Float32, CPU, false, 21)
	defer m.Free()
	ids := seq(9, 5)
	b := Batch{B: 1, T: 9, IDs: ids, Attn: []int64{1, 1, 1, 1, 1, 1, 1, 1, 1}, Positions: []int64{0, 1, 2, 3, 4, 5, 6, 7, 8}}
	run := func(autocast, ckpt bool) ([]float32, map[string][]float32) {
		if err := m.SetAutocast(autocast, BFloat16); err != nil {
			t.Fatal(err)
		}
		if err := m.SetCheckpointing(ckpt); err != nil {
			t.Fatal(err)
		}
		s := NewScope()
		defer s.Close()
		o, err := m.Forward(b, ForwardOptions{Grad: true, Temperature: 1})
		if err != nil {
			t.Fatal(err)
		}
		s.Own(o.LogProbs)
		if o.LogProbs.DType() != Float32 {
			t.Fatalf("logprobs are %v, want f32", o.LogProbs.DType())
		}
		lp, _ := o.LogProbs.Float32s()
		if err := s.Sum(o.LogProbs).Backward(); err != nil {
			t.Fatal(err)
		}
		grads := map[string][]float32{}
		for _, n := range m.Names() {
			p := s.Adopt(m.Param(n))
			if p.DType() != Float32 {
				t.Fatalf("%s became %v under autocast", n, p.DType())
			}
			g := s.Adopt(p.Grad())
			if g == nil {
				t.Fatalf("%s has no gradient (autocast %v, checkpointing %v)", n, autocast, ckpt)
			}
			grads[n], _ = g.Float32s()
			p.ZeroGrad()
		}
		return lp, grads
	}
	plain, _ := run(false, false)
	mixed, gMixed := run(true, false)
	_, gCkpt := run(true, true)
	var diff float64
	for i := range plain {
		diff = math.Max(diff, math.Abs(float64(plain[i]-mixed[i])))
	}
	// bf16 keeps 8 bits of mantissa: logits of size ~1 move by ~1e-2.
	t.Logf("max |logprob f32 - logprob autocast bf16| = %.3g", diff)
	if diff == 0 || diff > 0.1 {
		t.Errorf("autocast moved log-probabilities by %g: want bf16 rounding (0 < d <= 0.1)", diff)
	}
	for n, g := range gMixed {
		for i := range g {
			if math.Abs(float64(g[i]-gCkpt[n][i])) > 1e-6 {
				t.Fatalf("%s[%d]: %v under autocast, %v with checkpointing under autocast", n, i, g[i], gCkpt[n][i])
			}
		}
	}
	// The engine decodes under the same autocast: fed the sequence token
	// by token, its log-probability of each next token is the autocast
	// forward's up to bf16 rounding, and differs from its own f32 one.
	engineLogprobs := func(autocast bool) []float64 {
		if err := m.SetAutocast(autocast, BFloat16); err != nil {
			t.Fatal(err)
		}
		e, err := NewEngine(m, 1, 16)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Free()
		var out []float64
		for j := 0; j < 8; j++ {
			if err := e.Prefill(0, ids[j:j+1]); err != nil {
				t.Fatal(err)
			}
			logits, err := e.PendingLogits(0)
			if err != nil {
				t.Fatal(err)
			}
			mx := math.Inf(-1)
			for _, v := range logits {
				mx = math.Max(mx, float64(v))
			}
			var z float64
			for _, v := range logits {
				z += math.Exp(float64(v) - mx)
			}
			out = append(out, float64(logits[ids[j+1]])-mx-math.Log(z))
		}
		return out
	}
	e32, e16 := engineLogprobs(false), engineLogprobs(true)
	var toForward, toF32 float64
	for j := range e16 {
		toForward = math.Max(toForward, math.Abs(e16[j]-float64(mixed[j])))
		toF32 = math.Max(toF32, math.Abs(e16[j]-e32[j]))
	}
	t.Logf("engine under autocast: max |to the autocast forward| = %.3g, max |to the f32 engine| = %.3g", toForward, toF32)
	if toF32 == 0 || toForward > 0.1 {
		t.Errorf("the engine does not decode under autocast")
	}
}

// A values-only forward (the critic's) runs no LM head: no logprobs, no
// entropy, the same values as a full forward. The entropy keeps an
// autograd graph only when asked (an entropy bonus in the loss); the
// logprobs keep theirs either way.
func TestForwardValuesOnlyAndEntropyGraph(t *testing.T) {
	m, _ := NewRandomModel(tinyConfig(), Float32, CPU, true, 11)
	defer m.Free()
	ids := seq(6, 3)
	b := Batch{B: 1, T: len(ids), IDs: ids, Attn: []int64{1, 1, 1, 1, 1, 1}, Positions: []int64{0, 1, 2, 3, 4, 5}}
	full, err := m.Forward(b, ForwardOptions{Values: true})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Free()
	only, err := m.Forward(b, ForwardOptions{Values: true, ValuesOnly: true, Entropy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer only.Free()
	if only.LogProbs != nil || only.Entropy != nil {
		t.Fatal("a values-only forward returned logprobs or entropies")
	}
	a, _ := full.Values.Float32s()
	v, _ := only.Values.Float32s()
	if !slices.Equal(a, v) {
		t.Errorf("values-only forward %v, full forward %v", v, a)
	}
	if _, err := m.Forward(b, ForwardOptions{ValuesOnly: true}); err == nil {
		t.Error("ValuesOnly without Values: want an error")
	}
	for _, entGrad := range []bool{false, true} {
		o, err := m.Forward(b, ForwardOptions{Grad: true, Entropy: true, EntropyGrad: entGrad})
		if err != nil {
			t.Fatal(err)
		}
		if !o.LogProbs.RequiresGrad() || o.Entropy.RequiresGrad() != entGrad {
			t.Errorf("EntropyGrad %v: logprobs require grad %v, entropy %v", entGrad, o.LogProbs.RequiresGrad(), o.Entropy.RequiresGrad())
		}
		o.Free()
	}
}

// Loading is strict, as transformers' is: a config.json with fewer layers
// than the weights (one layer of a two-layer checkpoint) is an error
// naming the unused tensors, not a smaller model; so is a stray tensor.
// The ignorable extras load: a rotary inv_freq buffer of an older
// checkpoint, and lm_head.weight beside tied embeddings.
func TestLoadIsStrict(t *testing.T) {
	m, _ := NewRandomModel(tinyConfig(), Float32, CPU, false, 5)
	defer m.Free()
	dir := t.TempDir()
	if err := m.Save(dir); err != nil {
		t.Fatal(err)
	}
	cfg, err := ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Layers < 2 {
		t.Fatalf("the test needs at least 2 layers, the tiny config has %d", cfg.Layers)
	}
	fewer := cfg
	fewer.Layers = 1
	b, err := fewer.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadModel(dir, Float32, CPU, false)
	if err == nil || !strings.Contains(err.Error(), "model.layers.1.mlp.down_proj.weight") || !strings.Contains(err.Error(), "not used") {
		t.Fatalf("config with fewer layers than the weights: %v; want an error naming layer 1's tensors", err)
	}

	// The original config with extras in the weights file.
	dir2 := t.TempDir()
	if err := m.Save(dir2); err != nil {
		t.Fatal(err)
	}
	r, err := safetensors.Open(dir2)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for _, n := range r.Names() {
		info, _ := r.Info(n)
		data, _ := r.Bytes(n)
		ts = append(ts, safetensors.Tensor{Name: n, DType: info.DType, Shape: info.Shape, Data: data})
	}
	r.Close()
	write := func(extra ...safetensors.Tensor) error {
		if err := safetensors.Write(filepath.Join(dir2, "model.safetensors"), append(slices.Clone(ts), extra...), nil); err != nil {
			t.Fatal(err)
		}
		back, err := LoadModel(dir2, Float32, CPU, false)
		back.Free()
		return err
	}
	f32 := func(name string, n int64) safetensors.Tensor {
		return safetensors.Tensor{Name: name, DType: safetensors.F32, Shape: []int64{n}, Data: make([]byte, 4*n)}
	}
	if err := write(f32("model.layers.0.self_attn.rotary_emb.inv_freq", 4)); err != nil {
		t.Errorf("an inv_freq buffer must be ignored: %v", err)
	}
	if err := write(f32("model.extra.weight", 3)); err == nil || !strings.Contains(err.Error(), "model.extra.weight") {
		t.Errorf("a stray tensor: %v, want an error naming it", err)
	}
}

// sameWeights fails unless b holds every weight of a, bit for bit (as
// after a save and a load).
func sameWeights(t *testing.T, a, b *Model) {
	t.Helper()
	for _, n := range a.Names() {
		x, _ := a.Param(n)
		y, _ := b.Param(n)
		xb, _ := x.Bytes(Float32)
		yb, _ := y.Bytes(Float32)
		x.Free()
		y.Free()
		if string(xb) != string(yb) {
			t.Fatalf("%s differs after save/load", n)
		}
	}
}

// A model id loads the model of its snapshot in the Hugging Face cache
// (files linked into blobs/, as huggingface_hub writes them), at the
// revision asked for; an id that is not there is an error naming the
// cache.
func TestLoadModelFromHubCache(t *testing.T) {
	m, _ := NewRandomModel(tinyConfig(), Float32, CPU, false, 22)
	defer m.Free()
	src := t.TempDir()
	if err := m.Save(src); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	t.Setenv("HF_HUB_CACHE", cache)
	hubcachetest.Put(t, cache, "org/tiny", "v1", "0123456789abcdef0123456789abcdef01234567", src)
	for _, id := range []string{"org/tiny@v1", "org/tiny@0123456789abcdef0123456789abcdef01234567"} {
		back, err := LoadModel(id, Float32, CPU, false)
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		sameWeights(t, m, back)
		back.Free()
		if cfg, err := ReadConfig(id); err != nil || cfg.Layers != tinyConfig().Layers {
			t.Errorf("ReadConfig(%s) = %+v, %v", id, cfg, err)
		}
	}
	if _, err := LoadModel("org/tiny", Float32, CPU, false); err == nil || !strings.Contains(err.Error(), "models--org--tiny/refs/main") {
		t.Errorf("no main ref: %v", err)
	}
}
