package learner

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trajectory"
)

func tinyModel(t *testing.T) *torch.Model {
	t.Helper()
	if err := torch.Check(); err != nil {
		t.Skipf("libtorch shim not available: %v", err)
	}
	m, err := torch.NewRandomModel(torch.Config{ModelType: "qwen2", Vocab: 16, Hidden: 8, Intermediate: 16, Layers: 1,
		Heads: 2, KVHeads: 1, HeadDim: 4, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 16}, torch.Float32, torch.CPU, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Free)
	return m
}

// The warm start goes through the update's step: a non-finite loss skips
// the step and is counted. An infinite learning rate makes the weights
// non-finite after the first step (finite loss and gradient, the step is
// taken), so the next two mini-batches have NaN losses and are skipped.
func TestSFTCountsSkippedSteps(t *testing.T) {
	m := tinyModel(t)
	var seqs []*trajectory.Trajectory
	for i := range 3 {
		seqs = append(seqs, &trajectory.Trajectory{Tokens: []int32{1, int32(2 + i), 3, 4}, Mask: []uint8{0, 1, 1, 1}})
	}
	var losses []float64
	st, err := SFT(m, nil, seqs, SFTConfig{Epochs: 1, Batch: 1, Micro: 1, LR: math.Inf(1), MaxGradNorm: 1,
		After: func(_, _ int, loss float64) { losses = append(losses, loss) }}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if st.Steps != 3 || st.Skipped != 2 {
		t.Errorf("steps %d, skipped %d; want 3, 2 (losses %v)", st.Steps, st.Skipped, losses)
	}
	if !finite(losses[0]) || finite(losses[1]) || finite(losses[2]) {
		t.Errorf("losses %v: want the first finite, the others not", losses)
	}
}

// A warm-start micro-batch runs the LM head on the assistant's tokens
// alone (packed, one demonstration a row): its targets are exactly the
// loss tokens, and its loss and gradients are the padded forward's, which
// runs the head on every token.
func TestSFTHeadOnlyOnLossTokens(t *testing.T) {
	m := tinyModel(t)
	// Prompt, assistant, tool response, assistant; three lengths.
	mask := func(spans ...int) []uint8 {
		var out []uint8
		for i, n := range spans {
			for range n {
				out = append(out, uint8(i%2))
			}
		}
		return out
	}
	var mini []*trajectory.Trajectory
	for i, spans := range [][]int{{3, 2, 3, 2}, {4, 3}, {2, 2, 4, 3}} {
		mk := mask(spans...)
		tr := &trajectory.Trajectory{Mask: mk}
		for j := range mk {
			tr.Tokens = append(tr.Tokens, int32(1+(j*5+i*3)%15))
		}
		mini = append(mini, tr)
	}
	params, err := m.Params()
	if err != nil {
		t.Fatal(err)
	}
	opt, err := torch.NewAdamW(params, nil, []torch.AdamWGroup{torch.DefaultAdamW})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Free()
	ps := sftMicroBatches(mini, nil, 8)
	if len(ps) != 1 || ps[0].packed == nil {
		t.Fatalf("micro-batches %d, the first packed: %v; want one, packed", len(ps), len(ps) > 0 && ps[0].packed != nil)
	}
	lossTokens := 0
	for _, tr := range mini {
		for j := 1; j < len(tr.Tokens); j++ {
			lossTokens += int(tr.Mask[j])
		}
	}
	if got := len(ps[0].packed.at); got != lossTokens {
		t.Errorf("the head runs on %d tokens, want the %d loss tokens", got, lossTokens)
	}
	n := Norm(mini, true)
	var loss [2]float64
	var grads [2][]float32
	for i, packed := range []*packedRows{nil, ps[0].packed} {
		p := ps[0]
		p.packed = packed
		if loss[i], err = sftMicroBatch(m, opt, p, n); err != nil {
			t.Fatal(err)
		}
		grads[i] = takeGrads(t, params, opt)
	}
	sameGrads(t, grads[0], grads[1])
	if math.Abs(loss[0]-loss[1]) > 1e-6 || loss[0] <= 0 {
		t.Errorf("loss %v padded, %v on the loss tokens alone", loss[0], loss[1])
	}
}

// The warm start's learning rate follows its schedule, step by step. Two
// demonstrations, one step each, under three schedules: constant (rates lr,
// lr), linear over the two steps (lr, lr/2) and a 2-step warm-up (lr/2,
// lr). Each demonstration has tokens of its own, whose embedding rows
// get a gradient only at its step, and AdamW moves every entry of a row
// by a closed form of the two rates and the betas (the first moments over
// the square roots of the second, bias-corrected, are ±1 scaled): the
// second step's rows by lr1·√(1+β2)/(1+β1); the first step's rows by lr0
// at their step, then by lr1·β1·√(1+β2)/((1+β1)·√β2) on momentum alone.
func TestSFTFollowsSchedule(t *testing.T) {
	const lr, vocab = 1e-2, 16 // tinyModel's vocabulary
	b1, b2 := torch.DefaultAdamW.Beta1, torch.DefaultAdamW.Beta2
	for _, tc := range []struct {
		sched    Schedule
		lr0, lr1 float64
	}{
		{Schedule{}, lr, lr},
		{Schedule{Shape: "linear"}, lr, lr / 2},
		{Schedule{Shape: "constant", Warmup: 2}, lr / 2, lr},
	} {
		m := tinyModel(t)
		emb, err := m.Param("model.embed_tokens.weight")
		if err != nil {
			t.Fatal(err)
		}
		before, err := emb.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		own := [][]int32{{2, 3, 4}, {5, 6, 7}}
		var seqs []*trajectory.Trajectory
		for _, o := range own {
			seqs = append(seqs, &trajectory.Trajectory{Tokens: append(append([]int32{1}, o...), 9), Mask: []uint8{0, 1, 1, 1, 1}})
		}
		st, err := SFT(m, nil, seqs, SFTConfig{Epochs: 1, Batch: 1, Micro: 1, LR: lr, MaxGradNorm: 1, Schedule: tc.sched}, rand.New(rand.NewPCG(1, 2)))
		if err != nil || st.Steps != 2 {
			t.Fatalf("%+v: %d steps, %v", tc.sched, st.Steps, err)
		}
		after, err := emb.Float32s()
		emb.Free()
		if err != nil {
			t.Fatal(err)
		}
		hidden := len(before) / vocab
		moved := func(tok int32) (lo, hi float64) {
			lo = math.Inf(1)
			for k := int(tok) * hidden; k < int(tok+1)*hidden; k++ {
				d := math.Abs(float64(after[k] - before[k]))
				lo, hi = math.Min(lo, d), math.Max(hi, d)
			}
			return lo, hi
		}
		second := tc.lr1 * math.Sqrt(1+b2) / (1 + b1)
		first := tc.lr0 + tc.lr1*b1*math.Sqrt(1+b2)/((1+b1)*math.Sqrt(b2))
		// Which demonstration came first is the shuffle's; each row's
		// entries must all move by one of the two forms, one set each.
		var firstRows, secondRows int
		for _, o := range own {
			for _, tok := range o {
				lo, hi := moved(tok)
				switch {
				case math.Abs(lo-first) < 1e-4*first && math.Abs(hi-first) < 1e-4*first:
					firstRows++
				case math.Abs(lo-second) < 1e-4*second && math.Abs(hi-second) < 1e-4*second:
					secondRows++
				default:
					t.Errorf("%+v: token %d's row moved by %.6g to %.6g, want %.6g (first step) or %.6g (second)", tc.sched, tok, lo, hi, first, second)
				}
			}
		}
		if firstRows != 3 || secondRows != 3 {
			t.Errorf("%+v: %d rows moved as the first step's, %d as the second's; want 3 and 3", tc.sched, firstRows, secondRows)
		}
	}
}
