package learner

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trajectory"
)

// onPolicyBatch is behaviourBatch with trajectory n's last token made a
// tool token (mask 0), so that m has 4 action tokens and n 3, and with m's
// behaviour logprob of token 2 lowered by ln 4.
//
// Worked by hand: GRPO scores m 1 + 0.5 = 1.5 and n 0 + 0.5 = 0.5 (outcome
// plus turn 0's process reward), mean 1, Bessel std 1/sqrt 2, so A = ±0.5
// / (0.70710678 + 1e-6) = ±0.70710578. At ratio 1 the token-mean PPO loss
// over the 7 action tokens is -(4A - 3A)/7 = -0.10101511. The mismatch:
// ratio pi_train/pi_behaviour 4 on 1 of 7 tokens (beyond the bound 2),
// 1 on the others, so the mean k3 is (4 - 1 - ln 4)/7 = 1.613705639/7 =
// 0.230529377 and the largest logprob gap ln 4 = 1.386294361.
func onPolicyBatch(t *testing.T, l *Learner) []*trajectory.Trajectory {
	t.Helper()
	trs := behaviourBatch(t, l)
	trs[1].Mask[7], trs[1].Logprobs[7] = 0, 0
	trs[0].Logprobs[2] -= float32(math.Log(4))
	return trs
}

const (
	onPolicyLoss       = -0.10101511
	onPolicyMismatchKL = 0.230529377
)

// weights are the learner's parameters, flattened.
func weights(t *testing.T, l *Learner) []float32 {
	t.Helper()
	var out []float32
	for _, p := range l.Params() {
		v, err := p.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v...)
	}
	return out
}

// maxDiff is the largest |a[i] - b[i]|, +Inf when the lengths differ.
func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

// With one step over the whole batch, taking the old logprobs from the
// step's training forward (auto) and recomputing them in a pass of their
// own (recompute) are the same update: from the same weights, batch and
// seed, with the KL to a reference in the loss, the weights after the step
// agree within 1e-6, the stored logprobs and entropies within 1e-5, and
// the losses, the mismatch and the KL to the reference within 1e-6
// (relative, for the ratios beyond 1). Both
// give the hand-worked loss and mismatch of onPolicyBatch.
func TestOldFromStepMatchesRecompute(t *testing.T) {
	var reports [2]UpdateResult
	var after [2][]float32
	var batches [2][]*trajectory.Trajectory
	var before []float32
	for i, mode := range []string{"auto", "recompute"} {
		l := tinyLearnerWith(t, tinyPolicy(t, false, 7), NoCritic, func(s *Settings) {
			s.OldLogprobs = mode
			s.Loss.KLMode, s.Advantage.KLCoef = "loss", 0.1
		})
		l.SetReference(tinyPolicy(t, false, 8))
		batches[i] = onPolicyBatch(t, l)
		before = weights(t, l)
		r, err := l.Update(1, NewBatch(batches[i], false))
		if err != nil {
			t.Fatal(err)
		}
		reports[i], after[i] = r, weights(t, l)
	}
	step, re := reports[0], reports[1]
	if !step.OldFromStep || re.OldFromStep {
		t.Fatalf("old logprobs from the step: %v with auto, %v with recompute; want true, false", step.OldFromStep, re.OldFromStep)
	}
	t.Logf("weights after the step: max difference %.2g", maxDiff(after[0], after[1]))
	if d := maxDiff(after[0], after[1]); d > 1e-6 {
		t.Errorf("weights after the step differ by %g (> 1e-6)", d)
	}
	if moved := maxDiff(before, after[1]); moved < 1e-4 {
		t.Errorf("the step moved the weights by %g only: the comparison proves nothing", moved)
	}
	for k, tr := range batches[0] {
		other := batches[1][k]
		if d := maxDiff(tr.TrainLogprobs, other.TrainLogprobs); d > 1e-5 {
			t.Errorf("%s: train logprobs differ by %g (> 1e-5)", tr.ID, d)
		}
		if d := maxDiff(tr.Entropies, other.Entropies); d > 1e-5 {
			t.Errorf("%s: entropies differ by %g (> 1e-5)", tr.ID, d)
		}
	}
	for _, c := range []struct {
		what       string
		a, b, want float64
	}{
		{"policy loss", step.PolicyLoss, re.PolicyLoss, onPolicyLoss},
		{"mismatch KL", step.Mismatch.KL, re.Mismatch.KL, onPolicyMismatchKL},
		{"mismatch ratio max", step.Mismatch.RatioMax, re.Mismatch.RatioMax, 4},
		{"mismatch ratio min", step.Mismatch.RatioMin, re.Mismatch.RatioMin, 1},
		{"mismatch beyond bound", step.Mismatch.BeyondBound, re.Mismatch.BeyondBound, 1.0 / 7},
		{"largest logprob gap", step.Mismatch.MaxAbsDiff, re.Mismatch.MaxAbsDiff, math.Log(4)},
		{"KL loss", step.KLLoss, re.KLLoss, math.NaN()},
		{"KL to the reference", step.KLRef, re.KLRef, math.NaN()},
		{"approx KL", step.ApproxKL, re.ApproxKL, 0},
	} {
		// Relative to the figure when it exceeds 1: a ratio of 4 carries
		// four times its logprobs' noise.
		if math.Abs(c.a-c.b) > 1e-6*math.Max(1, math.Abs(c.b)) {
			t.Errorf("%s: %v from the step, %v recomputed; want equal within 1e-6 (relative above 1)", c.what, c.a, c.b)
		}
		if !math.IsNaN(c.want) && math.Abs(c.a-c.want) > 1e-5 {
			t.Errorf("%s: %v, want %v", c.what, c.a, c.want)
		}
	}
	if step.Mismatch.Tokens != 7 || re.Mismatch.Tokens != 7 || !step.HasRef || !(step.KLRef > 0) || !(step.KLLoss > 0) {
		t.Errorf("mismatch over %d and %d tokens (want 7), has ref %v, KL to the reference %v, KL loss %v (want > 0)",
			step.Mismatch.Tokens, re.Mismatch.Tokens, step.HasRef, step.KLRef, step.KLLoss)
	}
}

// The old logprobs come from the step only when the update is one step of
// the policy over the whole batch and nothing needs them before it; every
// other case recomputes them, and both fill the mismatch telemetry.
func TestOldFromStepOnlyWhenOnPolicy(t *testing.T) {
	for _, c := range []struct {
		name  string
		want  bool
		mode  CriticMode
		ref   bool
		tweak func(*Settings)
		model func(t *testing.T) *torch.Model
	}{
		{name: "auto", want: true},
		{name: "unset", want: true, tweak: func(s *Settings) { s.OldLogprobs, s.RolloutCorrection = "", "" }},
		{name: "KL in the loss with a reference", want: true, ref: true, tweak: func(s *Settings) { s.Loss.KLMode, s.Advantage.KLCoef = "loss", 0.1 }},
		{name: "KL in the reward without a reference", want: true, tweak: func(s *Settings) { s.Loss.KLMode = "reward" }},
		{name: "a mini-batch of exactly the batch", want: true, tweak: func(s *Settings) { s.MiniBatch, s.MicroBatch = 2, 1 }},
		{name: "shared critic after its warm-up", want: true, mode: SharedCritic, tweak: func(s *Settings) { s.CriticWarmup = 0 }},
		{name: "recompute", tweak: func(s *Settings) { s.OldLogprobs = "recompute" }},
		{name: "two epochs", tweak: func(s *Settings) { s.Epochs = 2 }},
		{name: "a mini-batch smaller than the batch", tweak: func(s *Settings) { s.MiniBatch, s.MicroBatch = 1, 1 }},
		{name: "rollout correction tis", tweak: func(s *Settings) { s.RolloutCorrection = "tis" }},
		{name: "KL in the reward with a reference", ref: true, tweak: func(s *Settings) { s.Loss.KLMode = "reward" }},
		{name: "critic warm-up", mode: SharedCritic, tweak: func(s *Settings) { s.CriticWarmup = 1 }},
		{name: "LoRA dropout", model: func(t *testing.T) *torch.Model {
			base := tinyPolicy(t, false, 7)
			defer base.Free() // the LoRA model keeps the weights alive
			m, err := torch.NewLoRAModel(base, torch.LoRA{Rank: 2, Alpha: 4, Dropout: 0.1, Targets: []string{"q_proj", "v_proj"}}, false, 1)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := tinyPolicy(t, c.mode == SharedCritic, 7)
			if c.model != nil {
				m.Free()
				m = c.model(t)
			}
			tweak := func(*Settings) {}
			if c.tweak != nil {
				tweak = c.tweak
			}
			l := tinyLearnerWith(t, m, c.mode, tweak)
			if c.ref {
				l.SetReference(tinyPolicy(t, false, 8))
			}
			trs := onPolicyBatch(t, l)
			r, err := l.Update(1, NewBatch(trs, false))
			if err != nil {
				t.Fatal(err)
			}
			if r.OldFromStep != c.want {
				t.Errorf("old logprobs from the step %v, want %v", r.OldFromStep, c.want)
			}
			if r.Mismatch.Tokens != 7 || math.Abs(r.Mismatch.RatioMax-4) > 1e-5 {
				t.Errorf("mismatch %+v, want 7 tokens and ratio max 4", r.Mismatch)
			}
		})
	}
}

// Taking the old logprobs from the step still fills what the store keeps:
// the trajectories' TrainLogprobs are the policy's logprobs before the
// step on the action tokens (the behaviour logprobs, computed by a forward
// of the same weights, except m's token 2 that onPolicyBatch lowered by
// ln 4), and 0 on every other token; the entropies lie in (0, ln 64] on the
// action tokens (an untrained policy over 64 tokens is near ln 64 =
// 4.159) and are 0 elsewhere.
func TestOldFromStepFillsTrainLogprobs(t *testing.T) {
	l := tinyLearner(t, "off")
	trs := onPolicyBatch(t, l)
	trs[0].Logprobs[2] += float32(math.Log(4))
	r, err := l.Update(1, NewBatch(trs, false))
	if err != nil {
		t.Fatal(err)
	}
	if !r.OldFromStep {
		t.Fatal("the old logprobs were recomputed; want them from the step")
	}
	for _, tr := range trs {
		if len(tr.TrainLogprobs) != len(tr.Tokens) || len(tr.Entropies) != len(tr.Tokens) {
			t.Fatalf("%s: %d train logprobs, %d entropies for %d tokens", tr.ID, len(tr.TrainLogprobs), len(tr.Entropies), len(tr.Tokens))
		}
		for j, m := range tr.Mask {
			lp, ent := tr.TrainLogprobs[j], float64(tr.Entropies[j])
			if m == 0 && (lp != 0 || ent != 0) {
				t.Errorf("%s token %d (not an action): train logprob %v, entropy %v; want 0", tr.ID, j, lp, ent)
			}
			if m == 1 && (math.Abs(float64(lp-tr.Logprobs[j])) > 1e-5 || lp == 0 || !(ent > 0 && ent <= math.Log(64)+1e-4)) {
				t.Errorf("%s token %d: train logprob %v (behaviour %v), entropy %v", tr.ID, j, lp, tr.Logprobs[j], ent)
			}
		}
	}
}
