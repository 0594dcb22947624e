package torch

import (
	"math"
	"strings"
	"testing"
)

// ForwardOptions.HeadRows runs the LM head on the listed outputs only: in
// float64, the log-probabilities and entropies there equal the whole
// forward's, every other one is 0, the values are the whole forward's,
// and every parameter's gradient of a loss that reads the listed
// log-probabilities and entropies (weighted) and all values equals the
// whole forward's, for the chunked head (chunks of 3, so that the rows
// left out shift the chunks) and the whole one, with and without
// activation checkpointing, and under routing record (the routed entry).
func TestForwardHeadRows(t *testing.T) {
	const B, T = 2, 11
	b := Batch{B: B, T: T, IDs: append(seq(T, 7), seq(T, 8)...), Attn: make([]int64, B*T), Positions: make([]int64, B*T)}
	for r := 0; r < B; r++ {
		for p := 0; p < T; p++ {
			b.Positions[r*T+p] = int64(p)
			if r == 0 || p < T-3 { // row 1: 3 tokens of right padding
				b.Attn[r*T+p] = 1
			}
		}
	}
	// Row 0's outputs 4..9 (a response after a prompt) and row 1's 2, 3
	// and 6 (two turns around a tool result): the padding left out too.
	rows := []int64{4, 5, 6, 7, 8, 9, 10 + 2, 10 + 3, 10 + 6}
	weight := make([]float64, B*(T-1))
	for k, r := range rows {
		weight[r] = 0.5 + float64(k)/7
	}
	for _, c := range []struct {
		name  string
		chunk int
		ckpt  bool
	}{{"chunked", 3, false}, {"whole", 0, false}, {"chunked checkpointed", 3, true}} {
		t.Run(c.name, func(t *testing.T) {
			m, err := NewRandomModel(tinyConfig(), Float64, CPU, true, 31)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Free()
			if err := m.SetLogitsChunk(c.chunk); err != nil {
				t.Fatal(err)
			}
			if err := m.SetCheckpointing(c.ckpt); err != nil {
				t.Fatal(err)
			}
			run := func(heads []int64) (lp, ent, vals []float64, grads map[string][]float64) {
				s := NewScope()
				defer s.Close()
				o, err := m.Forward(b, ForwardOptions{Grad: true, Entropy: true, EntropyGrad: true, Values: true, HeadRows: heads})
				if err != nil {
					t.Fatal(err)
				}
				s.Own(o.LogProbs, o.Entropy, o.Values)
				w := s.To(s.Float32(f32s(weight), B, T-1), CPU, Float64)
				loss := s.Add(s.Add(s.Sum(s.Mul(o.LogProbs, w)), s.MulScalar(s.Sum(s.Mul(o.Entropy, w)), 0.3)), s.Sum(o.Values))
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
				if err := loss.Backward(); err != nil {
					t.Fatal(err)
				}
				lp, _ = o.LogProbs.Float64s()
				ent, _ = o.Entropy.Float64s()
				vals, _ = o.Values.Float64s()
				grads = map[string][]float64{}
				for _, n := range m.Names() {
					p := s.Adopt(m.Param(n))
					g := s.Adopt(p.Grad())
					if g == nil {
						t.Fatalf("%s has no gradient", n)
					}
					grads[n], _ = g.Float64s()
					p.ZeroGrad()
				}
				return lp, ent, vals, grads
			}
			lp, ent, vals, grads := run(rows)
			wantLp, wantEnt, wantVals, wantGrads := run(nil)
			for i := range wantLp {
				wl, we := wantLp[i], wantEnt[i]
				if weight[i] == 0 {
					wl, we = 0, 0
				}
				if math.Abs(lp[i]-wl) > 1e-12 || math.Abs(ent[i]-we) > 1e-12 {
					t.Fatalf("output %d: logprob %v entropy %v with head rows, want %v and %v", i, lp[i], ent[i], wl, we)
				}
				if math.Abs(vals[i]-wantVals[i]) > 1e-12 {
					t.Fatalf("value %d: %v with head rows, %v without", i, vals[i], wantVals[i])
				}
			}
			for n, want := range wantGrads {
				for i, v := range grads[n] {
					if math.Abs(v-want[i]) > 1e-12*math.Max(1, math.Abs(want[i])) {
						t.Fatalf("%s[%d]: %v with head rows, %v without", n, i, v, want[i])
					}
				}
			}
		})
	}
}

// HeadRows goes through the routed entry too (routing record on a model
// with mixture-of-experts layers), and a list that is empty or names an
// output outside [B,T-1] is refused, naming it.
func TestForwardHeadRowsRoutedAndRefusals(t *testing.T) {
	m, err := NewRandomModel(moeTiny(), Float32, CPU, false, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Free()
	const T = 6
	b := Batch{B: 1, T: T, IDs: seq(T, 3), Attn: []int64{1, 1, 1, 1, 1, 1}, Positions: []int64{0, 1, 2, 3, 4, 5}}
	whole, err := m.Forward(b, ForwardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := whole.LogProbs.Float32s()
	whole.Free()
	o, err := m.Forward(b, ForwardOptions{RecordRouting: true, HeadRows: []int64{1, 4}})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := o.LogProbs.Float32s()
	o.Free()
	for i := range want {
		w := want[i]
		if i != 1 && i != 4 {
			w = 0
		}
		if math.Abs(float64(got[i]-w)) > 1e-6 {
			t.Fatalf("routed forward's logprob %d: %v with head rows 1 and 4, want %v", i, got[i], w)
		}
	}
	for _, c := range []struct {
		rows []int64
		want string
	}{{[]int64{}, "lists no output"}, {[]int64{0, 5}, "head row 1 (5) is outside 0..4"}, {[]int64{-1}, "head row 0 (-1)"}} {
		if _, err := m.Forward(b, ForwardOptions{HeadRows: c.rows}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("head rows %v: err %v, want %q", c.rows, err, c.want)
		}
	}
}

func f32s(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}
