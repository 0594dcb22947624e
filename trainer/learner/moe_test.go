package learner

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
)

// moePolicy is a random Qwen3 MoE policy (2 layers, both sparse, 4
// experts, top-2) whose config asks for the routers' load-balancing loss
// in the training loss when ask, with coefficient 0.5.
func moePolicy(t *testing.T, ask bool) *torch.Model {
	t.Helper()
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	m, err := torch.NewRandomModel(torch.Config{ModelType: "qwen3_moe", Vocab: 64, Hidden: 16, Intermediate: 32, Layers: 2,
		Heads: 2, KVHeads: 1, HeadDim: 8, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 32,
		MoE: torch.MoE{Experts: 4, ExpertsPerToken: 2, Intermediate: 8, SparseStep: 1, OutputRouterLogits: ask, RouterAuxLossCoef: 0.5}},
		torch.Float32, torch.CPU, false, 3)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A policy whose config sets output_router_logits has the routers'
// load-balancing loss in its loss, as transformers' CausalLM adds it:
// router_aux_loss_coef times each micro-batch's aux loss weighted by its
// share of the mini-batch's sequences (the aux loss of each micro-batch
// computed here by the model's own forward), and reports that weighted
// aux loss; without the setting the loss and the report have none. Packed
// micro-batches report one too.
func TestRouterAuxLossInPolicyLoss(t *testing.T) {
	var totals [2]float64
	var want float64
	for i, ask := range []bool{false, true} {
		l := tinyLearnerWith(t, moePolicy(t, ask), NoCritic, func(s *Settings) { s.MiniBatch, s.MicroBatch = 6, 3 })
		trs := segmentedBatch(t, l)
		est, err := algo.Get("grpo")
		if err != nil {
			t.Fatal(err)
		}
		b := NewBatch(trs, false)
		data, err := l.prepare(b, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := est.Advantages(trs, nil, l.s.Advantage); err != nil {
			t.Fatal(err)
		}
		var st Stats
		for _, p := range microBatches(b, l.s.MicroBatch, lossTargets(true)) {
			v, err := l.policyMicroBatch(p, data, l.norm(trs), true, false, &st)
			if err != nil {
				t.Fatal(err)
			}
			totals[i] += v
			if ask {
				o, err := l.Policy().Forward(p.Batch, torch.ForwardOptions{RouterAuxLoss: true})
				if err != nil {
					t.Fatal(err)
				}
				aux, _ := o.AuxLoss.Item()
				o.Free()
				want += aux * float64(len(p.Trs)) / float64(len(trs))
			}
		}
		if st.RouterAux != ask {
			t.Errorf("output_router_logits %v: aux loss reported %v", ask, st.RouterAux)
		}
		if ask && math.Abs(st.RouterAuxLoss-want) > 1e-6 {
			t.Errorf("reported aux loss %v, want %v", st.RouterAuxLoss, want)
		}
		if ask {
			if err := l.opt.ZeroGrad(); err != nil {
				t.Fatal(err)
			}
			var packed Stats
			pb := NewBatch(trs, true)
			for _, p := range microBatches(pb, l.s.MicroBatch, lossTargets(true)) {
				if _, err := l.policyMicroBatch(p, data, l.norm(trs), true, false, &packed); err != nil {
					t.Fatal(err)
				}
			}
			if !packed.RouterAux || !(packed.RouterAuxLoss > 0) {
				t.Errorf("packed: aux loss %v reported %v", packed.RouterAuxLoss, packed.RouterAux)
			}
		}
	}
	if d := totals[1] - totals[0]; math.Abs(d-0.5*want) > 1e-5 || want <= 0 {
		t.Errorf("the loss grew by %v with the aux loss asked for, want 0.5 x %v", d, want)
	}
}
