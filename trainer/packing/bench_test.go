package packing_test

import (
	"testing"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/packing"
)

// qwen3Episode is a 4-turn episode as Qwen3's template renders it when each
// turn's context drops the earlier turns' reasoning: a 300-token prompt
// (system, tools, question), then per turn a 3-token assistant header, 120
// tokens of reasoning and a 30-token call answered by a 150-token tool
// response; the last turn reasons and answers in 20 tokens. Segment k is
// the context of turn k (the prompt, the earlier turns without reasoning,
// their responses, the header) and its completion. appended is the one
// sequence the append context would train on (every turn's reasoning kept).
func qwen3Episode() (segs [][]int32, masks [][]uint8, appended []int32, appendMask []uint8) {
	next := int32(10)
	span := func(n int) []int32 {
		s := make([]int32, n)
		for i := range s {
			s[i] = next%500 + 10
			next++
		}
		return s
	}
	prompt, header := span(300), []int32{1, 2, 3}
	var think, call, resp [4][]int32
	for k := range 4 {
		think[k] = span(120)
		if k < 3 {
			call[k], resp[k] = span(30), span(150)
		} else {
			call[k] = span(20)
		}
	}
	add := func(seq []int32, mask []uint8, toks []int32, m uint8) ([]int32, []uint8) {
		for _, t := range toks {
			seq, mask = append(seq, t), append(mask, m)
		}
		return seq, mask
	}
	for k := range 4 {
		var s []int32
		var m []uint8
		s, m = add(s, m, prompt, 0)
		for j := range k {
			s, m = add(s, m, header, 0)
			s, m = add(s, m, call[j], 0)
			s, m = add(s, m, resp[j], 0)
		}
		s, m = add(s, m, header, 0)
		s, m = add(s, m, think[k], 1)
		s, m = add(s, m, call[k], 1)
		segs, masks = append(segs, s), append(masks, m)
	}
	appended, appendMask = add(nil, nil, prompt, 0)
	for k := range 4 {
		appended, appendMask = add(appended, appendMask, header, 0)
		appended, appendMask = add(appended, appendMask, think[k], 1)
		appended, appendMask = add(appended, appendMask, call[k], 1)
		appended, appendMask = add(appended, appendMask, resp[k], 0)
	}
	return segs, masks, appended, appendMask
}

// benchModel is a Qwen3-shaped model small enough for the CPU: 4 layers,
// hidden 256, 8 query and 2 key-value heads, vocabulary 512.
func benchModel(b *testing.B) *torch.Model {
	cfg := torch.Config{ModelType: "qwen3", Vocab: 512, Hidden: 256, Intermediate: 768, Layers: 4, Heads: 8, KVHeads: 2,
		HeadDim: 32, RMSEps: 1e-6, RopeTheta: 1e6, MaxPositions: 4096}
	m, err := torch.NewModel(cfg, torch.Float32, torch.CPU, false)
	if err != nil {
		b.Fatal(err)
	}
	if err := m.InitRandom(1, 0.02); err != nil {
		b.Fatal(err)
	}
	return m
}

// step is one update's forward and backward of the surrogate sum of the
// action tokens' log-probabilities.
func step(b *testing.B, out torch.Output, err error) {
	if err != nil {
		b.Fatal(err)
	}
	s := torch.NewScope()
	defer s.Close()
	s.Own(out.LogProbs)
	loss := s.Sum(out.LogProbs)
	if err := s.Err(); err != nil {
		b.Fatal(err)
	}
	if err := loss.Backward(); err != nil {
		b.Fatal(err)
	}
}

func seqBatch(seq []int32) torch.Batch {
	bt := torch.Batch{B: 1, T: len(seq)}
	for i, t := range seq {
		bt.IDs, bt.Attn, bt.Positions = append(bt.IDs, int64(t)), append(bt.Attn, 1), append(bt.Positions, int64(i))
	}
	return bt
}

// The cost of one update on the 4-turn episode: each turn's segment as
// its own sample (naive), the segments packed as a prefix tree, and the
// append context's one sequence. tokens/op is the tokens the forward
// runs; the packed time includes building the layout and its mask.
func BenchmarkEpisodeUpdate(b *testing.B) {
	segs, masks, appended, _ := qwen3Episode()
	m := benchModel(b)
	defer m.Free()
	b.Run("naive", func(b *testing.B) {
		n := 0
		for _, s := range segs {
			n += len(s)
		}
		for range b.N {
			for _, s := range segs {
				out, err := m.Forward(seqBatch(s), torch.ForwardOptions{Grad: true})
				step(b, out, err)
			}
		}
		b.ReportMetric(float64(n), "tokens/op")
	})
	b.Run("packed", func(b *testing.B) {
		var l packing.Layout
		for range b.N {
			l = packing.Pack(segs)
			pb := torch.PackedBatch{B: 1, T: l.Len(), Allowed: l.Allowed()}
			for i := range l.IDs {
				pb.IDs, pb.Positions = append(pb.IDs, int64(l.IDs[i])), append(pb.Positions, int64(l.Positions[i]))
			}
			for k, s := range segs {
				for i := 1; i < len(s); i++ {
					if masks[k][i] == 1 {
						src, tok, _ := l.Target(k, i)
						pb.Row, pb.Src, pb.Tgt = append(pb.Row, 0), append(pb.Src, int64(src)), append(pb.Tgt, int64(tok))
					}
				}
			}
			out, err := m.ForwardPacked(pb, torch.ForwardOptions{Grad: true})
			step(b, out, err)
		}
		b.ReportMetric(float64(l.Len()), "tokens/op")
	})
	b.Run("append", func(b *testing.B) {
		for range b.N {
			out, err := m.Forward(seqBatch(appended), torch.ForwardOptions{Grad: true})
			step(b, out, err)
		}
		b.ReportMetric(float64(len(appended)), "tokens/op")
	})
}
