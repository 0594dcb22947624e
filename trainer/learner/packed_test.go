package learner

import (
	"math"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trajectory"
)

// segmentedBatch is one group of three hand-made episodes: e0 of three
// segments whose contexts were rewritten (its second drops turn 0's
// tokens 5 6, its third drops turn 1's 10 11), e1 of two, and e2 of one.
// Packed as prefix trees, e0 is 7 + 6 (7 8 9 10 11 12 after 1 2 3 4) +
// 4 (12 13 14 15 after 1 2 3 4 7 8 9) = 17 tokens for 28 as samples, and
// e1 8 + 3 (22 24 25) = 11 for 15; e2 stays 7. Every segment has the
// episode's outcome; the behaviour logprobs are the policy's own.
func segmentedBatch(t *testing.T, l *Learner) []*trajectory.Trajectory {
	t.Helper()
	seg := func(id string, sample int, outcome float64, prompt int, tokens ...int32) *trajectory.Trajectory {
		tr := &trajectory.Trajectory{ID: id, Sample: sample, Outcome: outcome, PromptLen: prompt, Tokens: tokens}
		for j := range tokens {
			m, turn := uint8(0), int16(-1)
			if j >= prompt {
				m, turn = 1, 0
			}
			tr.Mask, tr.TurnOf = append(tr.Mask, m), append(tr.TurnOf, turn)
		}
		tr.Turns = []trajectory.Turn{{}}
		return tr
	}
	trs := []*trajectory.Trajectory{
		seg("e0", 0, 1, 4, 1, 2, 3, 4, 5, 6, 7),
		seg("e1", 1, 0, 4, 1, 2, 3, 4, 20, 21, 22, 23),
		seg("e0.1", 0, 1, 7, 1, 2, 3, 4, 7, 8, 9, 10, 11, 12),
		seg("e2", 2, 0.5, 4, 1, 2, 3, 4, 30, 31, 32),
		seg("e1.1", 1, 0, 5, 1, 2, 3, 4, 22, 24, 25),
		seg("e0.2", 0, 1, 9, 1, 2, 3, 4, 7, 8, 9, 12, 13, 14, 15),
	}
	lp, err := TokenLogprobs(nil, l.Policy(), trs, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range trs {
		tr.Logprobs = onActions(tr, lp[i])
	}
	return trs
}

// Micro-batches with packing keep every episode's segments together (the
// episodes of several segments in micro-batches of their own, e0's three
// alone since they exceed 2), where MicroBatches, sorting by length,
// scatters them; the mini-batches of the epochs keep them together too.
func TestMicroBatchesKeepSegmentsTogether(t *testing.T) {
	trs := []*trajectory.Trajectory{
		{ID: "e0", Tokens: make([]int32, 7)}, {ID: "e1", Tokens: make([]int32, 8)}, {ID: "e0.1", Tokens: make([]int32, 10)},
		{ID: "e2", Tokens: make([]int32, 7)}, {ID: "e1.1", Tokens: make([]int32, 7)}, {ID: "e0.2", Tokens: make([]int32, 11)},
		{ID: "e3", Tokens: make([]int32, 3)},
	}
	mbs, multi := unitMicroBatches(trs, NewBatch(trs, true).units, 2)
	// The episodes of one segment, e3 and e2, shortest first; then e1
	// (15 tokens) and e0 (28).
	want := [][]int{{6, 3}, {1, 4}, {0, 2, 5}}
	if !slices.EqualFunc(mbs, want, slices.Equal) || !slices.Equal(multi, []bool{false, true, true}) {
		t.Errorf("micro-batches %v (several segments: %v), want %v ([false true true])", mbs, multi, want)
	}
	if scattered := MicroBatches(trs, 2); slices.EqualFunc(scattered, want, slices.Equal) {
		t.Errorf("MicroBatches keeps the episodes together too (%v): the test proves nothing", scattered)
	}
	if got := miniBatches(episodesOf(trs), 4); !slices.EqualFunc(got, [][]int{{0, 2, 5}, {1, 4, 3, 6}}, slices.Equal) {
		t.Errorf("mini-batches of 4 by episode %v, want [[0 2 5] [1 4 3 6]]", got)
	}
	if got := episodesOf([]*trajectory.Trajectory{{}, {}}); len(got) != 2 {
		t.Errorf("two trajectories without an ID make %d episodes, want 2", len(got))
	}
}

// One update on segmentedBatch with packing on and off, from the same
// weights: the same losses and diagnostics (within 1e-5), the same stored
// logprobs and entropies (within 1e-5), the same weights after the step
// (within 1e-6; the step moved them by more than 1e-4), with the shared
// prefixes counted once: 35 tokens for 50. Run for GRPO taking the old
// logprobs from the step with the KL to a reference and an entropy bonus
// in the loss, GRPO recomputing them over two epochs with a rollout
// correction, GAE with a shared value head and with a separate critic,
// and GRPO training LoRA adapters with activation checkpointing.
func TestPackedUpdateMatchesSamples(t *testing.T) {
	cases := []struct {
		name   string
		critic CriticMode
		ref    bool
		lora   bool // LoRA adapters with activation checkpointing
		tweak  func(*Settings)
	}{
		{"grpo from the step, KL and entropy in the loss", NoCritic, true, false, func(s *Settings) {
			s.Loss.KLMode, s.Advantage.KLCoef, s.Loss.EntropyCoef = "loss", 0.1, 0.01
		}},
		{"grpo recomputed, two epochs, tis", NoCritic, false, false, func(s *Settings) {
			s.OldLogprobs, s.Epochs, s.RolloutCorrection = "recompute", 2, "tis"
		}},
		{"gae with a shared value head", SharedCritic, false, false, func(s *Settings) {
			s.Estimator, s.Loss.VFCoef, s.Loss.ValueClip = "gae", 0.5, 0.2
		}},
		{"gae with a separate critic", SeparateCritic, false, false, func(s *Settings) {
			s.Estimator, s.Loss.ValueClip = "gae", 0.2
		}},
		{"grpo on LoRA adapters with activation checkpointing", NoCritic, false, true, func(*Settings) {}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var res [2]UpdateResult
			var after [2][]float32
			var batch [2][]*trajectory.Trajectory
			var before []float32
			for i, pack := range []bool{false, true} {
				policy, critic := tinyPolicy(t, c.critic == SharedCritic, 7), (*torch.Model)(nil)
				if c.critic == SeparateCritic {
					critic = tinyPolicy(t, true, 9)
				}
				if c.lora {
					policy = loraPolicy(t, policy)
				}
				l := tinyLearnerOf(t, policy, critic, c.critic, func(s *Settings) {
					s.MiniBatch, s.MicroBatch = 8, 2
					c.tweak(s)
				})
				if c.ref {
					l.SetReference(tinyPolicy(t, false, 8))
				}
				batch[i] = segmentedBatch(t, l)
				before = weights(t, l)
				r, err := l.Update(1, NewBatch(batch[i], pack))
				if err != nil {
					t.Fatal(err)
				}
				res[i], after[i] = r, weights(t, l)
			}
			off, on := res[0], res[1]
			epochs := float64(1)
			if c.name == "grpo recomputed, two epochs, tis" {
				epochs = 2
			}
			if off.UpdateTokens != int(50*epochs) || off.SampleTokens != int(50*epochs) ||
				on.UpdateTokens != int(35*epochs) || on.SampleTokens != int(50*epochs) {
				t.Errorf("tokens through the model %d (of %d as samples) unpacked, %d (of %d) packed; want %v of %v, %v of %v",
					off.UpdateTokens, off.SampleTokens, on.UpdateTokens, on.SampleTokens, 50*epochs, 50*epochs, 35*epochs, 50*epochs)
			}
			for _, f := range []struct {
				what string
				a, b float64
			}{
				{"policy loss", off.PolicyLoss, on.PolicyLoss}, {"KL loss", off.KLLoss, on.KLLoss},
				{"value loss", off.ValueLoss, on.ValueLoss}, {"entropy", off.Entropy, on.Entropy},
				{"approx KL", off.ApproxKL, on.ApproxKL}, {"clip fraction high", off.ClipFracHigh, on.ClipFracHigh},
				{"gradient norm", off.GradNorm, on.GradNorm}, {"KL to the reference", off.KLRef, on.KLRef},
				{"mismatch KL", off.Mismatch.KL, on.Mismatch.KL}, {"loss tokens", float64(off.Tokens), float64(on.Tokens)},
			} {
				if math.Abs(f.a-f.b) > 1e-5 || math.IsNaN(f.a) != math.IsNaN(f.b) {
					t.Errorf("%s: %v unpacked, %v packed", f.what, f.a, f.b)
				}
			}
			if off.GradNorm == 0 || off.Steps != on.Steps || off.Steps == 0 {
				t.Errorf("gradient norm %v, steps %d and %d: the comparison proves nothing", off.GradNorm, off.Steps, on.Steps)
			}
			for k, tr := range batch[0] {
				other := batch[1][k]
				if d := maxDiff(tr.TrainLogprobs, other.TrainLogprobs); d > 1e-5 {
					t.Errorf("%s: old logprobs differ by %g", tr.ID, d)
				}
				if d := maxDiff(tr.Entropies, other.Entropies); d > 1e-5 {
					t.Errorf("%s: entropies differ by %g", tr.ID, d)
				}
				if d := maxDiff(tr.Advantages, other.Advantages); d > 1e-5 {
					t.Errorf("%s: advantages differ by %g", tr.ID, d)
				}
			}
			d := maxDiff(after[0], after[1])
			t.Logf("policy loss %.9g unpacked, %.9g packed; weights after the step differ by %.2g", off.PolicyLoss, on.PolicyLoss, d)
			if d > 1e-6 {
				t.Errorf("weights after the step differ by %g (> 1e-6)", d)
			}
			if moved := maxDiff(before, after[1]); moved < 1e-4 {
				t.Errorf("the step moved the weights by %g only: the comparison proves nothing", moved)
			}
		})
	}
}

// loraPolicy is base (which it frees) with rank-2 LoRA adapters on the
// query and value projections, trained with activation checkpointing.
func loraPolicy(t *testing.T, base *torch.Model) *torch.Model {
	t.Helper()
	defer base.Free() // the LoRA model keeps the weights alive
	m, err := torch.NewLoRAModel(base, torch.LoRA{Rank: 2, Alpha: 4, Targets: []string{"q_proj", "v_proj"}}, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetCheckpointing(true); err != nil {
		m.Free()
		t.Fatal(err)
	}
	return m
}

// The gradient of one policy step's loss on segmentedBatch, accumulated
// over its micro-batches, is the same packed and unpacked: every
// parameter's within 1e-5 of the largest (the value and the per-token
// logprobs too), for the learner's own loss (PPO, recomputed old
// logprobs, KL to a reference).
func TestPackedGradientsMatchSamples(t *testing.T) {
	l := tinyLearnerWith(t, tinyPolicy(t, false, 7), NoCritic, func(s *Settings) {
		s.MiniBatch, s.MicroBatch, s.OldLogprobs = 8, 2, "recompute"
		s.Loss.KLMode, s.Advantage.KLCoef = "loss", 0.1
	})
	l.SetReference(tinyPolicy(t, false, 8))
	trs := segmentedBatch(t, l)
	est, err := algo.Get("grpo")
	if err != nil {
		t.Fatal(err)
	}
	var loss [2]float64
	var grads [2][]float32
	var old [2][][]float32
	for i, pack := range []bool{false, true} {
		b := NewBatch(trs, pack)
		data, err := l.prepare(b, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := est.Advantages(trs, nil, l.s.Advantage); err != nil {
			t.Fatal(err)
		}
		for _, tr := range trs {
			old[i] = append(old[i], onActions(tr, data[tr].Old))
		}
		var st Stats
		ps := microBatches(b, l.s.MicroBatch, lossTargets(true))
		if packed := ps[len(ps)-1].packed != nil; packed != pack {
			t.Fatalf("packing %v: the last micro-batch packed %v", pack, packed)
		}
		for _, p := range ps {
			v, err := l.policyMicroBatch(p, data, l.norm(trs), true, false, &st)
			if err != nil {
				t.Fatal(err)
			}
			loss[i] += v
		}
		grads[i] = takeGrads(t, l.params, l.opt)
	}
	for k := range old[0] {
		if d := maxDiff(old[0][k], old[1][k]); d > 1e-5 {
			t.Errorf("%s: old logprobs on the actions differ by %g", trs[k].ID, d)
		}
	}
	sameGrads(t, grads[0], grads[1])
	t.Logf("loss %.9g unpacked, %.9g packed", loss[0], loss[1])
	if math.Abs(loss[0]-loss[1]) > 1e-6 {
		t.Errorf("loss %v unpacked, %v packed", loss[0], loss[1])
	}
}

// takeGrads returns every parameter's gradient, flattened in order, and
// zeroes them for the next pass.
func takeGrads(t *testing.T, params []*torch.Tensor, opt *torch.AdamW) []float32 {
	t.Helper()
	var out []float32
	for _, p := range params {
		g, err := p.Grad()
		if err != nil || g == nil {
			t.Fatalf("no gradient: %v", err)
		}
		v, err := g.Float32s()
		g.Free()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v...)
	}
	if err := opt.ZeroGrad(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameGrads fails unless every gradient of b is within 1e-5 of a's (times
// a's largest, at least 1), and a is not all zero.
func sameGrads(t *testing.T, a, b []float32) {
	t.Helper()
	largest := 0.0
	for _, g := range a {
		largest = math.Max(largest, math.Abs(float64(g)))
	}
	if d := maxDiff(a, b); largest == 0 || d > 1e-5*math.Max(1, largest) {
		t.Errorf("gradients differ by %g (largest %g)", d, largest)
	}
}
