package bench

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
)

func TestTrainTiny(t *testing.T) {
	cfg := tiny()
	r, err := Train(cfg)
	if err != nil {
		t.Fatal(err)
	}
	obj := jsonLine(t, r, cfg, "train")
	positive(t, obj, "tokens_per_s", "median_s", "cpu_s", "forward_s", "backward_s", "optim_s", "grad_norm")
	for _, k := range []string{"decode_tokens_per_s", "prefill_s", "ms_per_step"} {
		if _, ok := obj[k]; ok {
			t.Errorf("train result carries the generate field %s", k)
		}
	}
	checkRuns(t, r, cfg.Repeats)
	// 3 sequences x 8 tokens per update.
	if !near(r.TokensPerS, 24/r.MedianS) {
		t.Errorf("tokens_per_s %v, want 24/%v", r.TokensPerS, r.MedianS)
	}
	// With old = detached logp the ratio is 1, so the loss is minus the mean
	// advantage over the mask whatever the weights: rows of 7 scored tokens
	// t = 0..6, of which t+1 >= 8/2 selects t = 3..6.
	adv, mask := lossInputs(cfg)
	var sum float64
	for row := 0; row < cfg.Batch; row++ {
		for tok := 0; tok < 7; tok++ {
			want := float32(0)
			if tok >= 3 {
				want = 1
				sum += float64(adv[row*7+tok])
			}
			if mask[row*7+tok] != want {
				t.Fatalf("mask[%d,%d] = %v, want %v", row, tok, mask[row*7+tok], want)
			}
		}
	}
	if want := -sum / 12; math.Abs(r.Loss-want) > 1e-5 {
		t.Errorf("loss %v, want -mean(adv over mask) = %v", r.Loss, want)
	}
}

// The benchmark's loss (the trainer's loss.PolicyLoss) on hand-picked
// ratios: the clip binds above 1+eps for a positive advantage and below
// 1-eps for a negative one.
func TestPPOLoss(t *testing.T) {
	s := torch.NewScope()
	defer s.Close()
	// ratios exp(logp - old) = 1, 1.5, 0.5, 1.5 with advantages 1, 2, -1, -1:
	//   min(1*1, 1*1)        =  1
	//   min(1.5*2, 1.2*2)    =  2.4  (clipped)
	//   min(0.5*-1, 0.8*-1)  = -0.8  (clipped)
	//   min(1.5*-1, 1.2*-1)  = -1.5  (not clipped: the pessimistic term)
	// The mask drops the last: loss = -(1 + 2.4 - 0.8)/3 = -2.6/3.
	logp := s.Float32([]float32{0, float32(math.Log(1.5)), float32(math.Log(0.5)), float32(math.Log(1.5))}, 1, 4)
	old := s.Float32([]float32{0, 0, 0, 0}, 1, 4)
	adv := s.Float32([]float32{1, 2, -1, -1}, 1, 4)
	mask := s.Float32([]float32{1, 1, 1, 0}, 1, 4)
	loss := ppoLoss(s, logp, old, adv, mask, algo.Norm{Tokens: 3, Sequences: 1})
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	got, err := loss.Item()
	if err != nil {
		t.Fatal(err)
	}
	if want := -2.6 / 3; math.Abs(got-want) > 1e-6 {
		t.Errorf("loss %v, want %v", got, want)
	}
}
