package torch

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// routingBatch is 8 rows of 16 tokens, the last row right-padded after 10.
func routingBatch() Batch {
	b := Batch{B: 8, T: 16}
	for r := range 8 {
		b.IDs = append(b.IDs, seq(16, int64(11+r))...)
		for p := range 16 {
			attn := int64(1)
			if r == 7 && p >= 10 {
				attn = 0
			}
			b.Attn, b.Positions = append(b.Attn, attn), append(b.Positions, int64(p))
		}
	}
	return b
}

// routedForward runs the training forward with opt and returns its
// logprobs and the routing it recorded.
func routedForward(t *testing.T, m *Model, b Batch, opt ForwardOptions) ([]float64, *Routing) {
	t.Helper()
	opt.RecordRouting = true
	o, err := m.Forward(b, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Free()
	lp, err := o.LogProbs.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	return lp, o.Routing
}

// realDiff is the largest difference of two [B,T-1] logprobs over the
// positions whose target is a real token of b.
func realDiff(b Batch, x, y []float64) float64 {
	d := 0.0
	for r := range b.B {
		for p := 0; p < b.T-1; p++ {
			if b.Attn[r*b.T+p+1] == 1 {
				d = math.Max(d, math.Abs(x[r*(b.T-1)+p]-y[r*(b.T-1)+p]))
			}
		}
	}
	return d
}

// A router on a near tie: two experts of each sparse layer have router
// rows 1e-4 apart (and one of them an output 30 times larger), so where
// the two straddle the top-k the choice is the rounding's. The rollout
// runs under bfloat16 autocast, the training forward in float32: without
// replay some tokens take another expert in the two, and the training
// logprobs differ from the rollout's by far more than bfloat16's rounding
// (the mismatch is visible); replaying the rollout's choices, the training
// forward takes exactly those experts and its logprobs differ from the
// rollout's by rounding only. Replaying a forward's own choices gives its
// logprobs; the router still gets a gradient under replay, and the
// checkpointed forward replays as the plain one does.
func TestMoERoutingReplay(t *testing.T) {
	m, err := NewRandomModel(moeTiny(), Float32, CPU, false, 21)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	if got := m.Config.SparseLayers(); got != 2 {
		t.Fatalf("%d sparse layers, want 2 (layer 1 is dense)", got)
	}
	H := m.Config.Hidden
	editParams(t, m, []string{"mlp.gate.weight"}, func(_ int, w []float32) {
		for j := range H {
			w[2*H+j] = w[1*H+j] + 1e-4*w[3*H+j]
		}
	})
	editParams(t, m, []string{"mlp.experts.2.down_proj.weight"}, func(_ int, w []float32) {
		for i := range w {
			w[i] *= 30
		}
	})
	b := routingBatch()

	if err := m.SetAutocast(true, BFloat16); err != nil {
		t.Fatal(err)
	}
	rollLP, rollR := routedForward(t, m, b, ForwardOptions{})
	if err := m.SetAutocast(false, BFloat16); err != nil {
		t.Fatal(err)
	}
	if rollR == nil || rollR.Layers != 2 || rollR.K != 2 || len(rollR.Experts) != b.B*b.T*2*2 {
		t.Fatalf("recorded routing %+v", rollR)
	}
	plainLP, plainR := routedForward(t, m, b, ForwardOptions{})
	flips := 0
	for i := 0; i < len(plainR.Experts); i += 2 {
		x, y := slices.Clone(plainR.Experts[i:i+2]), slices.Clone(rollR.Experts[i:i+2])
		slices.Sort(x)
		slices.Sort(y)
		if !slices.Equal(x, y) {
			flips++
		}
	}
	replayLP, replayR := routedForward(t, m, b, ForwardOptions{ReplayRouting: rollR})
	without, with := realDiff(b, plainLP, rollLP), realDiff(b, replayLP, rollLP)
	t.Logf("%d of %d token-layers route differently under bfloat16; logprob mismatch with the rollout %.3g without replay, %.3g with",
		flips, len(plainR.Experts)/2, without, with)
	if flips == 0 {
		t.Fatal("no token routes differently under bfloat16 and float32: the near tie does not flip")
	}
	if !slices.Equal(replayR.Experts, rollR.Experts) {
		t.Error("the replaying forward did not take the replayed experts")
	}
	if with > 0.05 || without < 10*with || without < 0.03 {
		t.Errorf("mismatch %.3g without replay, %.3g with: want a visible one without (>= 0.03 and 10x) and rounding with (<= 0.05)", without, with)
	}

	// Replaying a forward's own choices is that forward.
	own, _ := routedForward(t, m, b, ForwardOptions{ReplayRouting: plainR})
	if d := maxDiff64(own, plainLP); d > 1e-6 {
		t.Errorf("replaying its own routing changes the logprobs by %g", d)
	}

	// Gradients under replay: the router's flows (its probabilities weight
	// the replayed experts); checkpointing replays alike.
	grads := func(ckpt bool) ([]float64, map[string][]float32) {
		if err := m.SetCheckpointing(ckpt); err != nil {
			t.Fatal(err)
		}
		defer m.SetCheckpointing(false)
		o, err := m.Forward(b, ForwardOptions{Grad: true, ReplayRouting: rollR})
		if err != nil {
			t.Fatal(err)
		}
		defer o.Free()
		lp, _ := o.LogProbs.Float64s()
		s := NewScope()
		defer s.Close()
		loss := s.Neg(s.Sum(o.LogProbs))
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		g := map[string][]float32{}
		for _, n := range m.Names() {
			p, _ := m.Param(n)
			if gr, _ := p.Grad(); gr != nil {
				g[n], _ = gr.Float32s()
				gr.Free()
			}
			p.ZeroGrad()
			p.Free()
		}
		return lp, g
	}
	lp0, g0 := grads(false)
	lp1, g1 := grads(true)
	if d := maxDiff64(lp0, replayLP); d > 1e-6 {
		t.Errorf("the forward with gradients replays to other logprobs (%g)", d)
	}
	if d := maxDiff64(lp0, lp1); d > 1e-6 {
		t.Errorf("checkpointed replay: logprobs differ by %g", d)
	}
	router := g0["model.layers.0.mlp.gate.weight"]
	if router == nil || slices.Max(router) == 0 && slices.Min(router) == 0 {
		t.Fatal("no gradient reaches the router under replay")
	}
	for n, g := range g0 {
		if d := maxDiff32(g, g1[n]); d > 1e-5 {
			t.Errorf("checkpointed replay: gradient of %s differs by %g", n, d)
		}
	}
}

// Routing replay refuses what it cannot do, by name: a routing of the
// wrong shape, an expert out of range or twice for a token, a model
// without sparse layers, a packed batch.
func TestMoERoutingRefusals(t *testing.T) {
	m, err := NewRandomModel(moeTiny(), Float32, CPU, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	b := padBatch()
	_, r := routedForward(t, m, b, ForwardOptions{})
	bad := func(edit func(r *Routing)) *Routing {
		c := *r
		c.Experts = slices.Clone(r.Experts)
		edit(&c)
		return &c
	}
	for _, c := range []struct {
		r    *Routing
		want string
	}{
		{bad(func(r *Routing) { r.Experts = r.Experts[:len(r.Experts)-2] }), "routing:"},
		{bad(func(r *Routing) { r.K = 1 }), "routing:"},
		{bad(func(r *Routing) { r.Experts[5] = 4 }), "expert outside 0..3"},
		{bad(func(r *Routing) { r.Experts[1] = r.Experts[0] }), "same expert twice"},
	} {
		if _, err := m.Forward(b, ForwardOptions{ReplayRouting: c.r}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("replay %v...: %v, want an error naming %q", c.r.Experts[:6], err, c.want)
		}
	}
	if _, err := m.ForwardPacked(PackedBatch{}, ForwardOptions{RecordRouting: true}); err == nil {
		t.Error("a packed forward with routing was accepted")
	}
	dense, err := NewRandomModel(tinyConfig(), Float32, CPU, false, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer dense.Free()
	if _, err := dense.Forward(b, ForwardOptions{RecordRouting: true}); err == nil || !strings.Contains(err.Error(), "no mixture-of-experts layer") {
		t.Errorf("routing of a dense model: %v", err)
	}
}

// Routing packs into a byte per choice up to 256 experts and two beyond,
// and reads back as written; a length that is not whole tokens and an
// expert past the model's are refused.
func TestRoutingBytes(t *testing.T) {
	r := Routing{Layers: 2, K: 3, Experts: []int16{0, 5, 255, 7, 1, 2, 9, 8, 3, 4, 6, 200}}
	for _, experts := range []int{256, 300} {
		b := r.Bytes(experts)
		width := 1
		if experts > 256 {
			width = 2
		}
		if len(b) != width*len(r.Experts) {
			t.Errorf("%d experts: %d bytes for %d choices", experts, len(b), len(r.Experts))
		}
		back, err := ParseRouting(b, experts, 2, 3)
		if err != nil || !slices.Equal(back.Experts, r.Experts) || back.Layers != 2 || back.K != 3 {
			t.Errorf("%d experts: read back %+v, %v", experts, back, err)
		}
	}
	big := Routing{Layers: 1, K: 1, Experts: []int16{511, 300}}
	if back, err := ParseRouting(big.Bytes(512), 512, 1, 1); err != nil || !slices.Equal(back.Experts, big.Experts) {
		t.Errorf("512 experts: %+v, %v", back, err)
	}
	if _, err := ParseRouting(r.Bytes(256)[:11], 256, 2, 3); err == nil || !strings.Contains(err.Error(), "whole number of tokens") {
		t.Errorf("cut short: %v", err)
	}
	if _, err := ParseRouting(r.Bytes(256), 200, 2, 3); err == nil || !strings.Contains(err.Error(), "expert 255") {
		t.Errorf("an expert past the model's: %v", err)
	}
}

// rowBatch is one row of ids, all real.
func rowBatch(ids []int64) Batch {
	b := Batch{B: 1, T: len(ids), IDs: ids}
	for p := range ids {
		b.Attn, b.Positions = append(b.Attn, 1), append(b.Positions, int64(p))
	}
	return b
}

// sortedChoices sorts each token-layer's k experts (the order of equal
// sets may differ between two top-k).
func sortedChoices(r *Routing) []int16 {
	out := slices.Clone(r.Experts)
	for i := 0; i < len(out); i += r.K {
		slices.Sort(out[i : i+r.K])
	}
	return out
}

// The engine records each slot's routing, prefilled, decoded and copied
// tokens alike, as the training forward over the slot's tokens routes
// them (sharp routers: no near tie). On a near tie, a rollout decoded
// under bfloat16 autocast and the float32 training forward route some
// tokens apart, and the training logprobs of the sampled tokens differ
// from the behaviour logprobs by far more than rounding; replaying the
// engine's record, they differ by rounding only.
func TestEngineRoutingRecord(t *testing.T) {
	m, err := NewRandomModel(moeTiny(), Float32, CPU, false, 9)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	sharpenRouters(t, m)
	for _, path := range []DecodePath{DecodeFused, DecodeUnfused} {
		e := newEngineOn(t, m, 3, path)
		if err := e.SetRecordRouting(true); err != nil {
			t.Fatal(err)
		}
		hist := [][]int64{seq(7, 1), seq(3, 2), nil}
		if err := e.PrefillBatch([]int{0, 1}, hist[:2]); err != nil {
			t.Fatal(err)
		}
		for step := range 6 {
			slots := []int{0, 1}
			if step == 3 {
				if err := e.CopySlot(0, 2); err != nil {
					t.Fatal(err)
				}
				hist[2] = slices.Clone(hist[0])
			}
			if step >= 3 {
				slots = append(slots, 2)
			}
			toks, lps := make([]int64, len(slots)), make([]float32, len(slots))
			if err := e.Step(slots, Sampling{Temperature: 1}, toks, lps); err != nil {
				t.Fatal(err)
			}
			for j, s := range slots {
				hist[s] = append(hist[s], toks[j])
			}
		}
		for s, ids := range hist {
			got, err := e.Routing(s)
			if err != nil {
				t.Fatal(err)
			}
			_, want := routedForward(t, m, rowBatch(ids), ForwardOptions{})
			if !slices.Equal(sortedChoices(got), sortedChoices(want)) {
				t.Errorf("%v slot %d: the engine recorded %v, the forward routes %v", path, s, got.Experts, want.Experts)
			}
		}
		if err := e.Release(1); err != nil {
			t.Fatal(err)
		}
		if r, err := e.Routing(1); err != nil || len(r.Experts) != 0 {
			t.Errorf("a released slot's routing: %v, %v", r, err)
		}
		if err := e.SetRecordRouting(true); err != nil {
			t.Errorf("record turned on again while on: %v", err)
		}
		if err := e.SetRecordRouting(false); err != nil {
			t.Fatal(err)
		}
		if err := e.SetRecordRouting(true); err == nil || !strings.Contains(err.Error(), "release the slots first") {
			t.Errorf("record turned on while slot 0 holds unrecorded tokens: %v", err)
		}
		e.Free()
	}

	// The near tie of TestMoERoutingReplay, decoded under bfloat16.
	tie, err := NewRandomModel(moeTiny(), Float32, CPU, false, 21)
	if err != nil {
		t.Fatal(err)
	}
	defer tie.Free()
	H := tie.Config.Hidden
	editParams(t, tie, []string{"mlp.gate.weight"}, func(_ int, w []float32) {
		for j := range H {
			w[2*H+j] = w[1*H+j] + 1e-4*w[3*H+j]
		}
	})
	editParams(t, tie, []string{"mlp.experts.2.down_proj.weight"}, func(_ int, w []float32) {
		for i := range w {
			w[i] *= 30
		}
	})
	if err := tie.SetAutocast(true, BFloat16); err != nil {
		t.Fatal(err)
	}
	const slots, prompt, steps = 6, 8, 20
	e := newEngineOn(t, tie, slots, DecodeUnfused)
	defer e.Free()
	if err := e.SetRecordRouting(true); err != nil {
		t.Fatal(err)
	}
	hist, behaviour := make([][]int64, slots), make([][]float32, slots)
	all := make([]int, slots)
	for s := range slots {
		hist[s], all[s] = seq(prompt, int64(30+s)), s
	}
	if err := e.PrefillBatch(all, hist); err != nil {
		t.Fatal(err)
	}
	for range steps {
		toks, lps := make([]int64, slots), make([]float32, slots)
		if err := e.Step(all, Sampling{Temperature: 1}, toks, lps); err != nil {
			t.Fatal(err)
		}
		for s := range slots {
			hist[s], behaviour[s] = append(hist[s], toks[s]), append(behaviour[s], lps[s])
		}
	}
	if err := tie.SetAutocast(false, BFloat16); err != nil {
		t.Fatal(err)
	}
	flips := 0
	var without, with float64
	for s := range slots {
		rec, err := e.Routing(s)
		if err != nil {
			t.Fatal(err)
		}
		b := rowBatch(hist[s])
		plain, plainR := routedForward(t, tie, b, ForwardOptions{})
		replayed, _ := routedForward(t, tie, b, ForwardOptions{ReplayRouting: rec})
		x, y := sortedChoices(plainR), sortedChoices(rec)
		for i := 0; i < len(x); i += rec.K {
			if !slices.Equal(x[i:i+rec.K], y[i:i+rec.K]) {
				flips++
			}
		}
		for j, lp := range behaviour[s] {
			at := prompt - 1 + j // the position predicting generated token j
			without = math.Max(without, math.Abs(plain[at]-float64(lp)))
			with = math.Max(with, math.Abs(replayed[at]-float64(lp)))
		}
	}
	t.Logf("%d token-layers routed apart by the bfloat16 rollout; training vs behaviour logprobs differ by %.3g without replay, %.3g with",
		flips, without, with)
	if flips == 0 {
		t.Fatal("the bfloat16 rollout routes every token as the float32 forward: the near tie does not flip")
	}
	if with > 0.05 || without < 5*with {
		t.Errorf("mismatch %.3g without replay, %.3g with: want rounding with (<= 0.05) and 5x that without", without, with)
	}
}
