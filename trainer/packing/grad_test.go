package packing_test

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/packing"
)

// episode is three segments of a Qwen3-style episode (see packing_test.go's
// layout) with their action masks and advantages.
var episode = struct {
	segs [][]int32
	mask [][]uint8
	adv  []float64
}{
	segs: [][]int32{
		{1, 2, 3, 4, 5, 6, 7, 8},
		{1, 2, 3, 4, 7, 8, 9, 4, 10, 11},
		{1, 2, 3, 4, 7, 8, 9, 4, 10, 12, 4, 13},
	},
	mask: [][]uint8{
		{0, 0, 0, 0, 1, 1, 1, 1},
		{0, 0, 0, 0, 0, 0, 0, 0, 1, 1},
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1},
	},
	adv: []float64{0.7, -1.2, 0.4},
}

// grads runs loss, backpropagates it, and returns its value and every
// parameter's gradient, zeroing the gradients.
func grads(t *testing.T, m *torch.Model, loss func(s *torch.Scope) *torch.Tensor) (float64, [][]float64) {
	t.Helper()
	s := torch.NewScope()
	defer s.Close()
	l := loss(s)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.Backward(); err != nil {
		t.Fatal(err)
	}
	lv, _ := l.Item()
	ps, err := m.Params()
	if err != nil {
		t.Fatal(err)
	}
	s.Own(ps...)
	var out [][]float64
	for _, p := range ps {
		g, err := p.Grad()
		if err != nil || g == nil {
			t.Fatalf("no gradient: %v", err)
		}
		s.Own(g)
		v, _ := g.Float64s()
		out = append(out, v)
		if err := p.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
	}
	return lv, out
}

// The surrogate sum over segments s and their action tokens t of
// A_s * log pi(x_t | segment s through t-1) has the same value, the same
// log-probabilities and the same gradient for every parameter whether
// each segment runs as its own sequence or the episode runs packed.
func TestPackedGradientsEqualNaive(t *testing.T) {
	for _, c := range []struct {
		dt  torch.DType
		tol float64
	}{{torch.Float64, 1e-10}, {torch.Float32, 2e-5}} {
		cfg := torch.Config{ModelType: "qwen3", Vocab: 31, Hidden: 32, Intermediate: 48, Layers: 2, Heads: 4, KVHeads: 2,
			HeadDim: 8, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 64}
		m, err := torch.NewModel(cfg, c.dt, torch.CPU, false)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Free()
		if err := m.InitRandom(7, 0.2); err != nil {
			t.Fatal(err)
		}
		naive := func(s *torch.Scope) *torch.Tensor {
			var total *torch.Tensor
			for k, seg := range episode.segs {
				T := len(seg)
				b := torch.Batch{B: 1, T: T}
				w := make([]float64, T-1)
				for i, tok := range seg {
					b.IDs, b.Attn, b.Positions = append(b.IDs, int64(tok)), append(b.Attn, 1), append(b.Positions, int64(i))
					if i > 0 && episode.mask[k][i] == 1 {
						w[i-1] = episode.adv[k]
					}
				}
				out, err := m.Forward(b, torch.ForwardOptions{Grad: true})
				if err != nil {
					t.Fatal(err)
				}
				s.Own(out.LogProbs)
				lp := s.Adopt(out.LogProbs.To(torch.CPU, torch.Float64))
				term := s.Sum(s.Mul(lp, s.Adopt(torch.FromFloat64(w, 1, int64(T-1)))))
				if total == nil {
					total = term
				} else {
					total = s.Add(total, term)
				}
			}
			return total
		}
		l := packing.Pack(episode.segs)
		pb := torch.PackedBatch{B: 1, T: l.Len(), Allowed: l.Allowed()}
		for i := range l.IDs {
			pb.IDs, pb.Positions = append(pb.IDs, int64(l.IDs[i])), append(pb.Positions, int64(l.Positions[i]))
		}
		var w []float64
		for k, seg := range episode.segs {
			for i := 1; i < len(seg); i++ {
				if episode.mask[k][i] == 1 {
					src, tok, _ := l.Target(k, i)
					pb.Row, pb.Src, pb.Tgt = append(pb.Row, 0), append(pb.Src, int64(src)), append(pb.Tgt, int64(tok))
					w = append(w, episode.adv[k])
				}
			}
		}
		packed := func(s *torch.Scope) *torch.Tensor {
			out, err := m.ForwardPacked(pb, torch.ForwardOptions{Grad: true})
			if err != nil {
				t.Fatal(err)
			}
			s.Own(out.LogProbs)
			lp := s.Adopt(out.LogProbs.To(torch.CPU, torch.Float64))
			return s.Sum(s.Mul(lp, s.Adopt(torch.FromFloat64(w, int64(len(w))))))
		}
		ln, gn := grads(t, m, naive)
		lpk, gp := grads(t, m, packed)
		if math.Abs(ln-lpk) > c.tol*math.Max(1, math.Abs(ln)) {
			t.Errorf("%s: loss naive %v, packed %v", c.dt, ln, lpk)
		}
		worst := 0.0
		for i := range gn {
			for j := range gn[i] {
				worst = math.Max(worst, math.Abs(gn[i][j]-gp[i][j]))
			}
		}
		if worst > c.tol {
			t.Errorf("%s: gradients differ by up to %g (tolerance %g)", c.dt, worst, c.tol)
		}
		t.Logf("%s: loss %.12g, %d packed tokens for %d, largest gradient difference %.3g", c.dt, ln, l.Len(), 30, worst)
	}
}
