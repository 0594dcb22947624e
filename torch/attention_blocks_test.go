package torch

import (
	"math"
	"testing"
)

// The training forward on the CPU runs a causal mask's attention in blocks
// of queries, each with the keys up to its last query (attend_blocks in
// cgo/model.cpp), once a sequence holds more than one block (64 queries).
// Its log-probabilities, entropies and every parameter's gradient (of a
// loss that reads the values too) equal those of the whole attention,
// computed by libtorch's autograd over the grouped path (AttentionSDPA,
// which never runs in blocks), up to float32 rounding: for a right-padded
// batch, with and without activation checkpointing, and for packed rows
// whose explicit mask is causal (two sequences in a row) or is not (a
// query that attends a later key, which must not run in blocks: there the
// two agree as well).
func TestAttentionBlocksMatchWholeAttention(t *testing.T) {
	cfg := tinyConfig()
	const T = 150 // blocks of 64, 64 and 22 queries
	full := Batch{B: 2, T: T, IDs: append(seq(T, 3), seq(T, 4)...), Attn: make([]int64, 2*T), Positions: make([]int64, 2*T)}
	for b := 0; b < 2; b++ {
		for p := 0; p < T; p++ {
			full.Positions[b*T+p] = int64(p)
			if b == 0 || p < T-40 { // row 1: 40 tokens of right padding
				full.Attn[b*T+p] = 1
			}
		}
	}
	// One packed row of two sequences, 0-89 and 90-149, each causal.
	packed := func(future bool) PackedBatch {
		pb := PackedBatch{B: 1, T: T, IDs: seq(T, 5), Positions: make([]int64, T), Allowed: make([]uint8, T*T)}
		for q := 0; q < T; q++ {
			start := 0
			if q >= 90 {
				start = 90
			}
			pb.Positions[q] = int64(q - start)
			for k := start; k <= q; k++ {
				pb.Allowed[q*T+k] = 1
			}
			if q+1 < T && q+1 != 90 {
				pb.Row, pb.Src, pb.Tgt = append(pb.Row, 0), append(pb.Src, int64(q)), append(pb.Tgt, pb.IDs[q+1])
			}
		}
		if future {
			pb.Allowed[10*T+20] = 1 // query 10 also attends key 20
		}
		return pb
	}
	cases := []struct {
		name string
		ckpt bool
		run  func(m *Model, opt ForwardOptions) (Output, error)
	}{
		{"padded", false, func(m *Model, opt ForwardOptions) (Output, error) { return m.Forward(full, opt) }},
		{"padded checkpointed", true, func(m *Model, opt ForwardOptions) (Output, error) { return m.Forward(full, opt) }},
		{"packed", false, func(m *Model, opt ForwardOptions) (Output, error) { return m.ForwardPacked(packed(false), opt) }},
		{"packed with a later key", false, func(m *Model, opt ForwardOptions) (Output, error) {
			return m.ForwardPacked(packed(true), opt)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, _ := NewRandomModel(cfg, Float32, CPU, true, 17)
			defer m.Free()
			if err := m.SetCheckpointing(c.ckpt); err != nil {
				t.Fatal(err)
			}
			run := func(mode AttentionMode) (lp, ent []float32, grads map[string][]float32) {
				if err := m.SetAttention(mode); err != nil {
					t.Fatal(err)
				}
				s := NewScope()
				defer s.Close()
				o, err := c.run(m, ForwardOptions{Grad: true, Entropy: true, EntropyGrad: true, Values: true})
				if err != nil {
					t.Fatal(err)
				}
				s.Own(o.LogProbs, o.Entropy, o.Values)
				loss := s.Add(s.Add(s.Sum(o.LogProbs), s.Sum(o.Entropy)), s.Sum(o.Values))
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
				if err := loss.Backward(); err != nil {
					t.Fatal(err)
				}
				lp, _ = o.LogProbs.Float32s()
				ent, _ = o.Entropy.Float32s()
				grads = map[string][]float32{}
				for _, n := range m.Names() {
					p := s.Adopt(m.Param(n))
					g := s.Adopt(p.Grad())
					if g == nil {
						t.Fatalf("%s has no gradient", n)
					}
					grads[n], _ = g.Float32s()
					p.ZeroGrad()
				}
				return lp, ent, grads
			}
			lp, ent, grads := run(AttentionAuto)
			wantLp, wantEnt, wantGrads := run(AttentionSDPA)
			for i := range wantLp {
				if d := math.Abs(float64(lp[i] - wantLp[i])); d > 1e-5 {
					t.Fatalf("logprob %d: %v in blocks, %v whole", i, lp[i], wantLp[i])
				}
				if d := math.Abs(float64(ent[i] - wantEnt[i])); d > 1e-5 {
					t.Fatalf("entropy %d: %v in blocks, %v whole", i, ent[i], wantEnt[i])
				}
			}
			for n, want := range wantGrads {
				scale := 0.0
				for _, v := range want {
					scale = math.Max(scale, math.Abs(float64(v)))
				}
				for i, v := range grads[n] {
					if d := math.Abs(float64(v - want[i])); d > 1e-5*math.Max(scale, 1) {
						t.Fatalf("%s[%d]: %v in blocks, %v whole (largest |gradient| %v)", n, i, v, want[i], scale)
					}
				}
			}
		})
	}
}
