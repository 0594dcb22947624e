package torch

import (
	"math"
	"testing"
)

// gemma4TrainConfig is a Gemma 4 made in code with every feature that
// crosses layers: sliding, sliding, full, sliding, full; layers 3 and 4
// kv-shared (reading layer 1's and layer 2's keys and values) with
// double-wide MLPs; full layers with attention_k_eq_v (no v_proj, one
// key/value head of twice the head size); per-layer inputs of 8; a window
// of 4 that the rows of 9 cross; logits capped.
func gemma4TrainConfig() Config {
	s, f := SlidingAttention, FullAttention
	return Config{ModelType: gemma4Type, Vocab: 97, Hidden: 32, Intermediate: 40, Layers: 5, Heads: 4, KVHeads: 2,
		HeadDim: 8, RMSEps: 1e-6, RopeTheta: 10000, MaxPositions: 256, BOS: 2, EOS: 1, LayerTypes: []string{s, s, f, s, f},
		Gemma: &Gemma4{SlidingWindow: 4, GlobalHeadDim: 16, GlobalKVHeads: 1, KEqV: true, KVSharedLayers: 2,
			DoubleWideMLP: true, PerLayerDim: 8, PerLayerVocab: 97, FinalSoftcap: 3, GlobalRope: "proportional",
			GlobalTheta: 1e6, GlobalPartial: 0.25}}
}

// gemma4PackedBatch is padBatch's rows packed one after the other into
// one row, each a tree of its own, with two trailing pads.
func gemma4PackedBatch() PackedBatch {
	b := padBatch()
	c := fixtureCase{}
	for r := range b.B {
		c.InputIDs = append(c.InputIDs, b.IDs[r*b.T:(r+1)*b.T])
		c.AttentionMask = append(c.AttentionMask, b.Attn[r*b.T:(r+1)*b.T])
		c.PositionIDs = append(c.PositionIDs, b.Positions[r*b.T:(r+1)*b.T])
		c.Logits = append(c.Logits, make([][]float64, b.T))
		for p := range b.T {
			c.Logits[r][p] = make([]float64, 97)
		}
	}
	pb, _ := packRows(c)
	return pb
}

// packedLossGrads is lossGrads for a packed batch: the gradients of the
// sum of its logprobs, by parameter name, zeroed after.
func packedLossGrads(t *testing.T, m *Model, b PackedBatch) map[string][]float64 {
	t.Helper()
	s := NewScope()
	defer s.Close()
	o, err := m.ForwardPacked(b, ForwardOptions{Grad: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Own(o.LogProbs, o.Values)
	loss := s.Sum(o.LogProbs)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return backwardGrads(t, s, m, loss)
}

// Activation checkpointing changes memory, not math, for Gemma 4: each
// layer recomputed in the backward hands every parameter the gradient of
// the plain forward -- the per-layer inputs' table, projection and norm
// (whose gradients come through every layer's per-layer input), the layers
// that keep keys and values for the kv-shared ones (whose gradients come
// back from the shared layers' recomputation), the shared layers' own --
// in float64, within 1e-10 of each tensor's largest entry, unpacked
// (padBatch: a padded row) and packed (the rows as trees of one row). The
// same for a LoRA model over it (all-linear, B drawn: the adapters on the
// layers that have each projection), and for a model with the MoE block in
// every layer (router and fused experts). A parameter without a gradient either
// way fails, except layer_scalar (a buffer).
func TestGemma4CheckpointingSameGradients(t *testing.T) {
	base, err := NewRandomModel(gemma4TrainConfig(), Float64, CPU, false, 23)
	if err != nil {
		t.Fatal(err)
	}
	defer base.Free()
	if err := base.InitRandom(23, 0.2); err != nil {
		t.Fatal(err)
	}
	lora := newLoRA(t, base, LoRA{Rank: 2, Alpha: 4, Targets: base.Config.AllLinear()}, false)
	defer lora.Free()
	setRandomB(t, lora)
	moeCfg := gemma4TrainConfig()
	moeCfg.MoE = MoE{Experts: 4, ExpertsPerToken: 2, Intermediate: 8, NormTopKProb: true, SparseStep: 1}
	moe, err := NewRandomModel(moeCfg, Float64, CPU, false, 29)
	if err != nil {
		t.Fatal(err)
	}
	defer moe.Free()
	if err := moe.InitRandom(29, 0.2); err != nil {
		t.Fatal(err)
	}
	for _, k := range []struct {
		name string
		m    *Model
	}{{"plain", base}, {"lora", lora}, {"moe", moe}} {
		for _, packed := range []bool{false, true} {
			name := k.name + map[bool]string{false: "/unpacked", true: "/packed"}[packed]
			t.Run(name, func(t *testing.T) {
				grads := func(ckpt bool) map[string][]float64 {
					if err := k.m.SetCheckpointing(ckpt); err != nil {
						t.Fatal(err)
					}
					defer k.m.SetCheckpointing(false)
					if packed {
						return packedLossGrads(t, k.m, gemma4PackedBatch())
					}
					return lossGrads(t, k.m, padBatch())
				}
				plain, ck := grads(false), grads(true)
				worst := 0.0
				for _, n := range k.m.Names() {
					if plain[n] == nil || ck[n] == nil {
						if len(n) > 12 && n[len(n)-12:] == "layer_scalar" {
							continue
						}
						t.Fatalf("%s: no gradient (checkpointing off %v, on %v)", n, plain[n] != nil, ck[n] != nil)
					}
					top := 0.0
					for _, g := range plain[n] {
						top = math.Max(top, math.Abs(g))
					}
					if top == 0 {
						t.Fatalf("%s: a zero gradient compares nothing", n)
					}
					for i := range plain[n] {
						d := math.Abs(plain[n][i]-ck[n][i]) / top
						worst = math.Max(worst, d)
						if d > 1e-10 {
							t.Fatalf("%s[%d]: %v without checkpointing, %v with (largest entry %v)", n, i, plain[n][i], ck[n][i], top)
						}
					}
				}
				t.Logf("%d tensors, max |diff| / largest entry %.1e", len(k.m.Names()), worst)
			})
		}
	}
}
