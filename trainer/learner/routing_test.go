package learner

import (
	"strings"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trajectory"
)

// nearTiePolicy is torch's tiny Qwen3 MoE (3 layers, the middle one
// dense, 4 experts, top-2) whose routers are on a near tie: at each sparse
// layer expert 2's router row is expert 1's plus 1e-4 times expert 3's,
// and expert 2's output is 30 times larger, so where the two straddle the
// top-k the choice is the rounding's and it shows in the logprobs. The
// same seed gives the same weights.
func nearTiePolicy(t *testing.T) *torch.Model {
	t.Helper()
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	m, err := torch.NewRandomModel(torch.Config{ModelType: "qwen3_moe", Vocab: 97, Hidden: 32, Intermediate: 48, Layers: 3,
		Heads: 4, KVHeads: 2, HeadDim: 16, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 256,
		MoE: torch.MoE{Experts: 4, ExpertsPerToken: 2, Intermediate: 24, NormTopKProb: true, SparseStep: 1, MLPOnlyLayers: []int{1}}},
		torch.Float32, torch.CPU, false, 21)
	if err != nil {
		t.Fatal(err)
	}
	H := m.Config.Hidden
	for _, name := range m.Names() {
		var edit func(w []float32)
		switch {
		case strings.HasSuffix(name, "mlp.gate.weight"):
			edit = func(w []float32) {
				for j := range H {
					w[2*H+j] = w[1*H+j] + 1e-4*w[3*H+j]
				}
			}
		case strings.HasSuffix(name, "mlp.experts.2.down_proj.weight"):
			edit = func(w []float32) {
				for i := range w {
					w[i] *= 30
				}
			}
		default:
			continue
		}
		p, err := m.Param(name)
		if err != nil {
			t.Fatal(err)
		}
		shape, _ := p.Shape()
		w, err := p.Float32s()
		p.Free()
		if err != nil {
			t.Fatal(err)
		}
		edit(w)
		x, _ := torch.FromFloat32(w, shape...)
		err = m.SetParam(name, x)
		x.Free()
		if err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// nearTieRollout decodes a group of four one-turn trajectories from m's
// KV-cache engine under bfloat16 autocast (a rollout engine in another
// precision than the float32 training forward), recording the behaviour
// logprobs and, as a rollout with routing replay keeps it, each token's
// experts.
func nearTieRollout(t *testing.T, m *torch.Model) []*trajectory.Trajectory {
	t.Helper()
	const slots, prompt, steps = 4, 8, 20
	if err := m.SetAutocast(true, torch.BFloat16); err != nil {
		t.Fatal(err)
	}
	defer m.SetAutocast(false, torch.BFloat16)
	e, err := torch.NewEngine(m, slots, prompt+steps+1)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Free()
	if err := e.SetRecordRouting(true); err != nil {
		t.Fatal(err)
	}
	trs, all, ids := make([]*trajectory.Trajectory, slots), make([]int, slots), make([][]int64, slots)
	for s := range slots {
		tr := &trajectory.Trajectory{ID: string(rune('a' + s)), Sample: s, Outcome: float64(s % 2), Reward: float64(s % 2),
			PromptLen: prompt, Turns: []trajectory.Turn{{}}}
		for j := range prompt {
			tok := int32(30 + s + 3*j)
			tr.Tokens, ids[s] = append(tr.Tokens, tok), append(ids[s], int64(tok))
			tr.Logprobs, tr.Mask, tr.TurnOf = append(tr.Logprobs, 0), append(tr.Mask, 0), append(tr.TurnOf, -1)
		}
		trs[s], all[s] = tr, s
		if err := e.Seed(s, uint64(s+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.PrefillBatch(all, ids); err != nil {
		t.Fatal(err)
	}
	for range steps {
		toks, lps := make([]int64, slots), make([]float32, slots)
		if err := e.Step(all, torch.Sampling{Temperature: 1}, toks, lps); err != nil {
			t.Fatal(err)
		}
		for s, tr := range trs {
			tr.Tokens, tr.Logprobs = append(tr.Tokens, int32(toks[s])), append(tr.Logprobs, lps[s])
			tr.Mask, tr.TurnOf = append(tr.Mask, 1), append(tr.TurnOf, 0)
		}
	}
	for s, tr := range trs {
		if tr.Routing, err = e.RoutingBytes(s); err != nil {
			t.Fatal(err)
		}
		if want := len(tr.Tokens) * 2 * 2; len(tr.Routing) != want {
			t.Fatalf("slot %d: %d bytes of routing, want %d (a byte for each of 2 experts at 2 sparse layers per token)", s, len(tr.Routing), want)
		}
	}
	return trs
}

// Routing replay and the mismatch telemetry, on a router near a tie: the
// bfloat16 rollout routes some tokens to other experts than the float32
// training forward, so without replay the update's mismatch figures show
// it (the largest logprob gap far beyond bfloat16's rounding); with
// replay the training forwards take the rollout's experts and the gap is
// rounding only. Both with the old logprobs recomputed and from the
// update's step.
func TestRoutingReplayRemovesTheMismatch(t *testing.T) {
	trs := nearTieRollout(t, nearTiePolicy(t))
	for _, old := range []string{"recompute", "auto"} {
		gap := map[bool]float64{}
		for _, replay := range []bool{false, true} {
			l := tinyLearnerWith(t, nearTiePolicy(t), NoCritic, func(s *Settings) { s.RoutingReplay, s.OldLogprobs = replay, old })
			batch := make([]*trajectory.Trajectory, len(trs))
			for i, tr := range trs {
				c := *tr
				batch[i] = &c
			}
			r, err := l.Update(0, NewBatch(batch, false))
			if err != nil {
				t.Fatal(err)
			}
			if r.Mismatch.Tokens != 4*20 {
				t.Fatalf("mismatch over %d tokens, want 80", r.Mismatch.Tokens)
			}
			if r.OldFromStep != (old == "auto") {
				t.Fatalf("old logprobs %s: from the step %v", old, r.OldFromStep)
			}
			gap[replay] = r.Mismatch.MaxAbsDiff
			t.Logf("old logprobs %s, replay %v: largest logprob gap %.3g, mismatch KL %.3g, ratio in [%.3g, %.3g]",
				old, replay, r.Mismatch.MaxAbsDiff, r.Mismatch.KL, r.Mismatch.RatioMin, r.Mismatch.RatioMax)
		}
		if gap[true] > 0.05 || gap[false] < 10*gap[true] || gap[false] < 0.01 {
			t.Errorf("old logprobs %s: largest gap %.3g without replay, %.3g with: want a visible one without (>= 0.01 and 10x) and rounding with (<= 0.05)",
				old, gap[false], gap[true])
		}
	}
}

// Replay refuses, by name, a trajectory without a record of every token,
// and a dense policy.
func TestRoutingReplayRefusals(t *testing.T) {
	trs := nearTieRollout(t, nearTiePolicy(t))
	trs[1].Routing = trs[1].Routing[:len(trs[1].Routing)-4]
	l := tinyLearnerWith(t, nearTiePolicy(t), NoCritic, func(s *Settings) { s.RoutingReplay = true })
	if _, err := l.Update(0, NewBatch(trs, false)); err == nil || !strings.Contains(err.Error(), "trajectory b has the routing of 27 tokens for its 28 tokens") {
		t.Errorf("a short record: %v", err)
	}
	dense := tinyLearnerWith(t, tinyPolicy(t, false, 7), NoCritic, func(s *Settings) { s.RoutingReplay = true })
	if _, err := dense.Update(0, NewBatch(behaviourBatch(t, dense), false)); err == nil || !strings.Contains(err.Error(), "no mixture-of-experts layer") {
		t.Errorf("a dense policy: %v", err)
	}
}
