package learner

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/trainer/algo"
)

// An unpacked micro-batch of the update runs the LM head on the tokens its
// losses read alone: its head rows are exactly the loss targets (the
// policy's tokens; the prompts and the padding left out), a pass over
// every token (allTargets) runs it whole, and one policy step's loss and
// every gradient are those of the whole head (within 1e-6 and 1e-5 of
// the largest).
func TestUnpackedHeadRowsAreLossTargets(t *testing.T) {
	l := tinyLearnerWith(t, tinyPolicy(t, false, 7), NoCritic, func(s *Settings) {
		s.MiniBatch, s.MicroBatch, s.OldLogprobs = 8, 3, "recompute"
	})
	trs := segmentedBatch(t, l)
	b := NewBatch(trs, false)
	for _, p := range microBatches(b, l.s.MicroBatch, allTargets) {
		if p.heads != nil {
			t.Fatalf("a pass over every token lists head rows %v", p.heads)
		}
	}
	ps := microBatches(b, l.s.MicroBatch, lossTargets(true))
	for _, p := range ps {
		W := p.Width()
		want := map[int64]bool{}
		for i, tr := range p.Trs {
			for j := 1; j < len(tr.Tokens); j++ {
				if tr.Mask[j] == 1 {
					want[int64(i*W+j-1)] = true
				}
			}
		}
		if len(p.heads) != len(want) {
			t.Fatalf("%d head rows, want the %d policy tokens", len(p.heads), len(want))
		}
		for _, r := range p.heads {
			if !want[r] {
				t.Fatalf("head row %d is not a policy token's output", r)
			}
		}
	}
	data, err := l.prepare(b, true)
	if err != nil {
		t.Fatal(err)
	}
	est, err := algo.Get("grpo")
	if err != nil {
		t.Fatal(err)
	}
	if err := est.Advantages(trs, nil, l.s.Advantage); err != nil {
		t.Fatal(err)
	}
	var loss [2]float64
	var grads [2][]float32
	for k, whole := range []bool{false, true} {
		var st Stats
		for _, p := range ps {
			if whole {
				p.heads = nil
			}
			v, err := l.policyMicroBatch(p, data, l.norm(trs), true, false, &st)
			if err != nil {
				t.Fatal(err)
			}
			loss[k] += v
		}
		grads[k] = takeGrads(t, l.params, l.opt)
	}
	if loss[0] == 0 || math.Abs(loss[0]-loss[1]) > 1e-6 {
		t.Errorf("loss %v with head rows, %v with the whole head", loss[0], loss[1])
	}
	sameGrads(t, grads[1], grads[0])
}
