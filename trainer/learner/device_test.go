package learner

import (
	"strings"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trajectory"
)

// The losses are built where the model is. These tests put the model on
// libtorch's meta device, a second device on a machine without a GPU: a
// tensor that a loss makes on the CPU and combines with a model output
// fails there as it fails on CUDA ("Expected all tensors to be on the same
// device"). Meta tensors have no values, so the tests build each loss and
// check where and what it is, and stop short of reading it.

func metaModel(t *testing.T, valueHead bool) *torch.Model {
	t.Helper()
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	m, err := torch.NewModel(torch.Config{ModelType: "qwen2", Vocab: 16, Hidden: 8, Intermediate: 16, Layers: 1,
		Heads: 2, KVHeads: 1, HeadDim: 4, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 16}, torch.Float32, torch.Meta, valueHead)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Free)
	return m
}

// metaBatch is two trajectories of different lengths with their
// advantages, returns and update data.
func metaBatch() ([]*trajectory.Trajectory, TokenTable) {
	trs := []*trajectory.Trajectory{maskTrajectory(), maskTrajectory()}
	trs[1].Tokens, trs[1].Mask, trs[1].TurnOf = trs[1].Tokens[:6], trs[1].Mask[:6], trs[1].TurnOf[:6]
	data := TokenTable{}
	for _, t := range trs {
		n := len(t.Tokens)
		t.Advantages, t.Returns = make([]float32, n), make([]float32, n)
		data[t] = &TokenData{Old: make([]float32, n), Ref: make([]float32, n), Values: make([]float32, n)}
	}
	return trs, data
}

// onDevice fails unless the scope is clean and every tensor is a scalar
// on the meta device.
func onDevice(t *testing.T, what string, s *torch.Scope, ts ...*torch.Tensor) {
	t.Helper()
	if err := s.Err(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for i, x := range ts {
		if x == nil {
			t.Fatalf("%s: tensor %d is nil", what, i)
		}
		shape, err := x.Shape()
		if err != nil {
			t.Fatal(err)
		}
		if d := x.Device(); d != torch.Meta || len(shape) != 0 {
			t.Errorf("%s: tensor %d is %v on %v, want a scalar on meta", what, i, shape, d)
		}
	}
}

func TestPolicyLossesOnTheModelsDevice(t *testing.T) {
	m := metaModel(t, true)
	trs, data := metaBatch()
	for _, shared := range []bool{false, true} {
		l := &Learner{policy: m, ref: m, s: Settings{LossMask: true, Temperature: 1, Loss: algo.LossConfig{PolicyLoss: "ppo", ClipLow: 0.2, ClipHigh: 0.2,
			DualClip: 3, LossAgg: "token-mean", KLEstimator: "k3", KLMode: "loss", EntropyCoef: 0.01, VFCoef: 0.5, ValueClip: 0.2},
			Advantage: algo.Options{KLCoef: 0.1}}}
		if shared {
			l.critic, l.mode = m, SharedCritic
		}
		s := torch.NewScopeOn(m.Device)
		terms, err := l.policyLoss(s, PadBatch(trs), data, l.norm(trs), true, false)
		if err != nil {
			t.Fatal(err)
		}
		// Policy, KL, five diagnostics, and the shared value loss.
		reported := []*torch.Tensor{terms.policy, terms.kl, terms.clipLow, terms.clipHigh, terms.approxKL, terms.entropy, terms.tokens}
		if shared {
			reported = append(reported, terms.value)
		} else if terms.value != nil {
			t.Errorf("a value loss without a shared critic")
		}
		onDevice(t, "policy loss", s, append([]*torch.Tensor{terms.total}, reported...)...)
		s.Close()
	}
}

func TestCriticLossOnTheModelsDevice(t *testing.T) {
	policy, critic := metaModel(t, false), metaModel(t, true)
	trs, data := metaBatch()
	l := &Learner{policy: policy, critic: critic, mode: SeparateCritic, s: Settings{LossMask: true, Loss: algo.LossConfig{LossAgg: "seq-mean-token-mean", ValueClip: 0.2}}}
	s := torch.NewScopeOn(critic.Device)
	defer s.Close()
	vl, err := l.criticLoss(s, PadBatch(trs), data, l.norm(trs))
	if err != nil {
		t.Fatal(err)
	}
	onDevice(t, "critic loss", s, vl)
}

func TestSFTLossOnTheModelsDevice(t *testing.T) {
	m := metaModel(t, false)
	trs, _ := metaBatch()
	s := torch.NewScopeOn(m.Device)
	defer s.Close()
	l, err := sftLoss(s, m, PadBatch(trs), Norm(trs, true))
	if err != nil {
		t.Fatal(err)
	}
	onDevice(t, "sft loss", s, l)
}

// Evaluation (the logprobs and values before an update, and of the
// reference) makes no tensor of its own: it fails on meta only where it
// reads the values back.
func TestEvaluationOnTheModelsDevice(t *testing.T) {
	m := metaModel(t, true)
	trs, _ := metaBatch()
	for name, f := range map[string]func() error{
		"logprobs": func() error { _, err := TokenLogprobs(nil, m, trs, 1, 1); return err },
		"values":   func() error { _, err := TokenValues(nil, m, trs, 1); return err },
	} {
		err := f()
		if err == nil || strings.Contains(err.Error(), "same device") || !strings.Contains(err.Error(), "meta") {
			t.Errorf("%s on meta: %v; want the read-back of a meta tensor to be the only failure", name, err)
		}
	}
}
