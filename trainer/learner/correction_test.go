package learner

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trajectory"
)

// tinyLearner is a learner of a small random policy on the CPU (the same
// weights for the same seed) with the given rollout correction.
func tinyLearner(t *testing.T, correction string) *Learner {
	t.Helper()
	return tinyLearnerWith(t, tinyPolicy(t, false, 7), NoCritic, func(s *Settings) { s.RolloutCorrection = correction })
}

// tinyPolicy is a small random policy on the CPU (the same weights for the
// same seed), with a value head when valueHead.
func tinyPolicy(t *testing.T, valueHead bool, seed uint64) *torch.Model {
	t.Helper()
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	m, err := torch.NewRandomModel(torch.Config{ModelType: "qwen2", Vocab: 64, Hidden: 16, Intermediate: 32, Layers: 1,
		Heads: 2, KVHeads: 1, HeadDim: 8, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 32}, torch.Float32, torch.CPU, valueHead, seed)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// tinyLearnerWith is the learner of policy m (which it owns from then on)
// with the critic mode and the settings of tinyLearner (GRPO, PPO's loss,
// one step over a batch of up to 4, no correction) as tweak changes them.
func tinyLearnerWith(t *testing.T, m *torch.Model, mode CriticMode, tweak func(*Settings)) *Learner {
	t.Helper()
	return tinyLearnerOf(t, m, nil, mode, tweak)
}

// tinyLearnerOf is tinyLearnerWith with a separate critic (nil unless mode
// is SeparateCritic), which it owns too.
func tinyLearnerOf(t *testing.T, m, critic *torch.Model, mode CriticMode, tweak func(*Settings)) *Learner {
	t.Helper()
	s := Settings{Estimator: "grpo", Advantage: algo.DefaultOptions(), FilterKeepRatio: 1,
		Loss:   algo.LossConfig{PolicyLoss: "ppo", ClipLow: 0.2, ClipHigh: 0.2, LossAgg: "token-mean", KLEstimator: "k3"},
		Epochs: 1, MiniBatch: 4, MicroBatch: 4, LossMask: true, MaxGradNorm: 1, Temperature: 1,
		PolicyOptim: torch.DefaultAdamW, CriticOptim: torch.DefaultAdamW, RolloutCorrection: "off", RolloutBound: 2}
	tweak(&s)
	l, err := New(m, critic, mode, s, nil, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		m.Free()
		critic.Free()
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// behaviourBatch is a group of two two-turn trajectories (maskTrajectory's
// layout, 4 action tokens each) rewarded 1 and 0, whose behaviour
// logprobs are the policy's own, as an engine identical to the training
// forward records them: l's pass of the old logprobs as prepare runs it,
// the same rows through the same LM head rows (HeadRows), so that they
// equal the update's recomputed ones bit for bit on every BLAS (a pass
// over every token, TokenLogprobs, multiplies a matrix of other rows,
// which OpenBLAS's Haswell kernels round differently in the last bit).
func behaviourBatch(t *testing.T, l *Learner) []*trajectory.Trajectory {
	t.Helper()
	trs := []*trajectory.Trajectory{maskTrajectory(), maskTrajectory()}
	trs[1].ID, trs[1].Outcome, trs[1].Tokens = "n", 0, []int32{10, 11, 22, 23, 30, 31, 42, 43}
	c := l.s
	rows, err := pass(l.dist, l.policy, NewBatch(trs, false), c.MicroBatch, lossTargets(c.LossMask),
		torch.ForwardOptions{Temperature: c.Temperature, Entropy: true}, false, pickLogprobs)
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range trs {
		tr.Values = nil
		tr.Logprobs = onActions(tr, rows[i][0])
	}
	return trs
}

// With identical engines the token-level truncated IS leaves the update
// as it is: every weight is exactly 1 (mean 1), the mismatch KL is 0 and
// the ratios are 1, and the policy loss and gradient norm equal those of
// the update without a correction, bit for bit (both with the old
// logprobs recomputed: without a correction the update would take them
// from its step). The recompute pass keeps its logprobs and entropies on
// the action tokens for the store.
func TestCorrectionWithIdenticalEnginesChangesNothing(t *testing.T) {
	on, off := tinyLearner(t, "tis"), tinyLearner(t, "off")
	off.s.OldLogprobs = "recompute"
	a, b := behaviourBatch(t, on), behaviourBatch(t, off)
	ra, err := on.Update(1, NewBatch(a, false))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := off.Update(1, NewBatch(b, false))
	if err != nil {
		t.Fatal(err)
	}
	if ra.WeightMean != 1 || !math.IsNaN(rb.WeightMean) {
		t.Errorf("mean weight %v with tis, %v without; want 1 and NaN", ra.WeightMean, rb.WeightMean)
	}
	mm := ra.Mismatch
	if mm.Tokens != 8 || mm.KL != 0 || mm.RatioMax != 1 || mm.RatioMin != 1 || mm.BeyondBound != 0 || mm.MaxAbsDiff != 0 {
		t.Errorf("mismatch with identical engines %+v, want 8 tokens, KL 0, ratios 1", mm)
	}
	if ra.PolicyLoss != rb.PolicyLoss || ra.GradNorm != rb.GradNorm || ra.PolicyLoss == 0 {
		t.Errorf("policy loss %v / grad norm %v with tis, %v / %v without: want equal and non-zero", ra.PolicyLoss, ra.GradNorm, rb.PolicyLoss, rb.GradNorm)
	}
	for _, tr := range a {
		for j, m := range tr.Mask {
			lp, ent := tr.TrainLogprobs[j], float64(tr.Entropies[j])
			if m == 0 && (lp != 0 || ent != 0) {
				t.Errorf("%s token %d (not an action): train logprob %v, entropy %v; want 0", tr.ID, j, lp, ent)
			}
			// an untrained policy over 64 tokens: entropy near ln 64 = 4.159
			if m == 1 && (lp != tr.Logprobs[j] || !(ent > 0 && ent <= math.Log(64)+1e-4)) {
				t.Errorf("%s token %d: train logprob %v (behaviour %v), entropy %v", tr.ID, j, lp, tr.Logprobs[j], ent)
			}
		}
	}
}

// A behaviour logprob lowered by ln 4 makes that token's ratio
// pi_train/pi_behaviour 4: tis caps its weight at C = 2, the other 7
// action tokens weigh 1, so the mean weight is (2 + 7)/8 = 1.125; the
// telemetry sees ratio 4 on 1 of 8 tokens and k3 = 4 - 1 - ln 4 =
// 1.613705639 on it, a mean of 0.201713205. Masked IS drops the token:
// (0 + 7)/8 = 0.875.
func TestCorrectionWithAPerturbedBehaviourLogprob(t *testing.T) {
	for mode, mean := range map[string]float64{"tis": 1.125, "mis": 0.875} {
		l := tinyLearner(t, mode)
		trs := behaviourBatch(t, l)
		trs[0].Logprobs[2] -= float32(math.Log(4))
		r, err := l.Update(1, NewBatch(trs, false))
		if err != nil {
			t.Fatal(err)
		}
		mm := r.Mismatch
		if math.Abs(r.WeightMean-mean) > 1e-6 || math.Abs(mm.RatioMax-4) > 1e-5 || mm.RatioMin != 1 ||
			mm.BeyondBound != 0.125 || math.Abs(mm.KL-0.201713205) > 1e-6 {
			t.Errorf("%s: mean weight %v (want %v), mismatch %+v (want ratio max 4, min 1, 1/8 beyond, KL 0.201713205)", mode, r.WeightMean, mean, mm)
		}
	}
}
