package torch

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// lmCase is one run of the chunked logprobs: hidden states h [n,hid], LM
// head w [v,hid], targets, and the weights a (of each logprob) and b (of
// each entropy) of the scalar loss sum(a*lp) + sum(b*ent) whose gradients
// are compared.
type lmCase struct {
	n, hid, v int
	h, w      []float32
	targets   []int64
	a, b      []float32
}

func randomLMCase(n, hid, v int, seed uint64) lmCase {
	r := rand.New(rand.NewPCG(seed, 1))
	c := lmCase{n: n, hid: hid, v: v}
	for range n * hid {
		c.h = append(c.h, float32(r.NormFloat64()))
	}
	for range v * hid {
		c.w = append(c.w, float32(r.NormFloat64()*0.8))
	}
	for range n {
		c.targets = append(c.targets, int64(r.IntN(v)))
		c.a = append(c.a, float32(r.Float64()*2-0.5))
		c.b = append(c.b, float32(r.Float64()*2-1))
	}
	return c
}

// lmResult is what a run gives: the values and the gradients of the loss
// w.r.t. h and w.
type lmResult struct{ lp, ent, gh, gw []float32 }

// runLM computes the case either with tokenLogprobs (chunk > 0) or, as the
// reference (chunk 0), unchunked from libtorch's own ops: z = h w^T / temp,
// log_softmax, gather, -(exp(logp) logp).sum. With entGrad the entropy
// term is in the loss; without it the entropy must come back without a
// graph and the loss is sum(a*lp) alone. A frozen head (a LoRA model's)
// takes no gradient: gw stays nil.
func runLM(t *testing.T, c lmCase, temp float64, chunk int, entGrad, frozen bool) lmResult {
	t.Helper()
	s := NewScope()
	defer s.Close()
	h := s.Float32(c.h, int64(c.n), int64(c.hid))
	w := s.Float32(c.w, int64(c.v), int64(c.hid))
	tg := s.Int64(c.targets, int64(c.n))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	h.SetRequiresGrad(true)
	w.SetRequiresGrad(!frozen)
	var lp, ent *Tensor
	if chunk > 0 {
		var err error
		lp, ent, err = tokenLogprobs(h, w, tg, temp, chunk, ForwardOptions{Grad: true, Entropy: true, EntropyGrad: entGrad})
		if err != nil {
			t.Fatal(err)
		}
		s.Own(lp, ent)
		if ent.RequiresGrad() != entGrad {
			t.Fatalf("chunk %d: entropy requires grad %v, want %v", chunk, ent.RequiresGrad(), entGrad)
		}
	} else {
		logp := s.LogSoftmax(s.DivScalar(s.Matmul(h, s.Transpose(w, 0, 1)), temp), 1)
		lp = s.Reshape(s.Gather(logp, 1, s.Int64(c.targets, int64(c.n), 1)), int64(c.n))
		ent = s.Neg(s.Sum(s.Mul(s.Exp(logp), logp), 1))
		if !entGrad {
			ent = s.Detach(ent)
		}
	}
	loss := s.Sum(s.Mul(lp, s.Float32(c.a, int64(c.n))))
	if entGrad {
		loss = s.Add(loss, s.Sum(s.Mul(ent, s.Float32(c.b, int64(c.n)))))
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	var res lmResult
	res.lp, _ = lp.Float32s()
	res.ent, _ = ent.Float32s()
	gh := s.Adopt(h.Grad())
	gw := s.Adopt(w.Grad())
	if gh == nil || (gw == nil) != frozen {
		t.Fatalf("chunk %d, frozen head %v: gradient of h %v, of w %v", chunk, frozen, gh != nil, gw != nil)
	}
	res.gh, _ = gh.Float32s()
	if gw != nil {
		res.gw, _ = gw.Float32s()
	}
	return res
}

// within fails unless got and want agree within tol (absolute, or relative
// to the largest |want| where that exceeds 1).
func within(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := 1.0
	for _, v := range want {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	for i := range got {
		if d := math.Abs(float64(got[i] - want[i])); d > tol*scale || math.IsNaN(float64(got[i])) {
			t.Fatalf("%s[%d] = %v, want %v (|diff| %.3g)", what, i, got[i], want[i], d)
		}
	}
}

// The chunked computation equals the unchunked one (libtorch's
// log_softmax and its autograd) within 1e-5 in f32: the values, and the
// gradients w.r.t. the hidden states and the LM head, with the entropy's
// gradient in the loss and without it, with the head trained and frozen
// (where, without the entropy's gradient, the forward forms d lp / d h),
// at temperatures 1 and 0.7, for chunks of 1 token, of 3 and 4 (which
// divide neither the 7 tokens nor the 11-entry vocabulary), of all 7 and of
// more than there are.
func TestTokenLogprobsMatchUnchunked(t *testing.T) {
	c := randomLMCase(7, 5, 11, 3)
	for _, temp := range []float64{1, 0.7} {
		for _, entGrad := range []bool{true, false} {
			for _, frozen := range []bool{false, true} {
				want := runLM(t, c, temp, 0, entGrad, frozen)
				for _, chunk := range []int{1, 3, 4, 7, 100} {
					got := runLM(t, c, temp, chunk, entGrad, frozen)
					what := fmt.Sprintf("temp %v, entropy grad %v, frozen head %v, chunk %d: ", temp, entGrad, frozen, chunk)
					within(t, what+"logprobs", got.lp, want.lp, 1e-5)
					within(t, what+"entropies", got.ent, want.ent, 1e-5)
					within(t, what+"grad h", got.gh, want.gh, 1e-5)
					within(t, what+"grad w", got.gw, want.gw, 1e-5)
				}
			}
		}
	}
}

// A case worked by hand: one token, hidden size 1 (h = 1), a vocabulary of
// 2 with w = [0, ln 3], temperature 1, target 0. Then z = [0, ln 3],
// p = [1/4, 3/4], lp = ln(1/4) = -1.3862944,
// H = -(1/4 ln(1/4) + 3/4 ln(3/4)) = 0.5623351.
// d lp/dz = onehot - p = [3/4, -3/4], so grad_w = dz h = [0.75, -0.75] and
// grad_h = dz . w = -0.75 ln 3 = -0.8239592.
// d H/dz_k = -p_k (ln p_k + H): k=0: -(1/4)(-1.3862944 + 0.5623351) =
// 0.2059898; k=1: -(3/4)(-0.2876821 + 0.5623351) = -0.2059898. With the
// loss lp + H: grad_w = [0.9559898, -0.9559898], grad_h = -0.9559898 ln 3
// = -1.0502621.
func TestTokenLogprobsByHand(t *testing.T) {
	c := lmCase{n: 1, hid: 1, v: 2, h: []float32{1}, w: []float32{0, float32(math.Log(3))},
		targets: []int64{0}, a: []float32{1}, b: []float32{1}}
	got := runLM(t, c, 1, 1, false, false)
	within(t, "logprob", got.lp, []float32{-1.3862944}, 1e-6)
	within(t, "entropy", got.ent, []float32{0.5623351}, 1e-6)
	within(t, "grad h (logprob)", got.gh, []float32{-0.8239592}, 1e-6)
	within(t, "grad w (logprob)", got.gw, []float32{0.75, -0.75}, 1e-6)
	got = runLM(t, c, 1, 1, false, true)
	within(t, "grad h (logprob, frozen head)", got.gh, []float32{-0.8239592}, 1e-6)
	got = runLM(t, c, 1, 1, true, false)
	within(t, "grad h (logprob + entropy)", got.gh, []float32{-1.0502621}, 1e-6)
	within(t, "grad w (logprob + entropy)", got.gw, []float32{0.9559898, -0.9559898}, 1e-6)
}

// Bad input is an error naming it.
func TestTokenLogprobsErrors(t *testing.T) {
	s := NewScope()
	defer s.Close()
	h := s.Float32(make([]float32, 6), 2, 3)
	w := s.Float32(make([]float32, 12), 4, 3)
	tg := s.Int64([]int64{0, 1}, 2)
	if _, _, err := tokenLogprobs(h, w, tg, 1, 0, ForwardOptions{}); err == nil {
		t.Error("chunk 0: want an error")
	}
	if _, _, err := tokenLogprobs(h, s.Float32(make([]float32, 8), 4, 2), tg, 1, 2, ForwardOptions{}); err == nil {
		t.Error("LM head of another hidden size: want an error")
	}
	m, _ := NewRandomModel(tinyConfig(), Float32, CPU, false, 1)
	defer m.Free()
	if err := m.SetLogitsChunk(-1); err == nil {
		t.Error("SetLogitsChunk(-1): want an error")
	}
}

// Through the whole model, chunked logits (chunks of 1 and 4 tokens over
// 2 x 6 positions, one sequence padded) give the logprobs, the entropies
// and every parameter's gradient of the unchunked forward (chunk 0)
// within 1e-5, at temperature 0.8, with an untied and a tied LM head, and
// without grad (the logprob recomputation and the reference's forward).
// The weights are drawn wider than usual (std 0.3) so the distributions
// are far from uniform.
func TestForwardChunkedLogitsMatchWhole(t *testing.T) {
	for _, tied := range []bool{false, true} {
		cfg := tinyConfig()
		cfg.TieEmbeddings = tied
		m, err := NewRandomModel(cfg, Float32, CPU, false, 21)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Free()
		if err := m.InitRandom(21, 0.3); err != nil {
			t.Fatal(err)
		}
		ids := append(seq(6, 5), seq(6, 9)...)
		b := Batch{B: 2, T: 6, IDs: ids, Attn: []int64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0},
			Positions: []int64{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5}}
		weights := []float32{0.5, -1, 2, 0.3, 1, -0.7, 1.5, 0.2, -0.4, 1, 0.8, -1.2}
		run := func(chunk int, grad bool) (lp, ent []float32, grads map[string][]float32) {
			if err := m.SetLogitsChunk(chunk); err != nil {
				t.Fatal(err)
			}
			s := NewScope()
			defer s.Close()
			o, err := m.Forward(b, ForwardOptions{Temperature: 0.8, Grad: grad, Entropy: true, EntropyGrad: grad})
			if err != nil {
				t.Fatal(err)
			}
			s.Own(o.LogProbs, o.Entropy)
			lp, _ = o.LogProbs.Float32s()
			ent, _ = o.Entropy.Float32s()
			if !grad {
				return lp, ent, nil
			}
			a := s.Float32(weights[:10], 2, 5)
			loss := s.Add(s.Sum(s.Mul(o.LogProbs, a)), s.Sum(s.Mul(o.Entropy, s.Neg(a))))
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if err := loss.Backward(); err != nil {
				t.Fatal(err)
			}
			grads = map[string][]float32{}
			for _, n := range m.Names() {
				p := s.Adopt(m.Param(n))
				g := s.Adopt(p.Grad())
				if g == nil {
					t.Fatalf("%s has no gradient (chunk %d)", n, chunk)
				}
				grads[n], _ = g.Float32s()
				p.ZeroGrad()
			}
			return lp, ent, grads
		}
		for _, grad := range []bool{true, false} {
			lp0, ent0, g0 := run(0, grad)
			for _, chunk := range []int{1, 4} {
				what := fmt.Sprintf("tied %v, grad %v, chunk %d: ", tied, grad, chunk)
				lp, ent, g := run(chunk, grad)
				within(t, what+"logprobs", lp, lp0, 1e-5)
				within(t, what+"entropies", ent, ent0, 1e-5)
				for n, want := range g0 {
					within(t, what+"grad "+n, g[n], want, 1e-5)
				}
			}
		}
	}
}
