package agent

import (
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/config"
)

// tinyGemma4 is model.tiny.model_type's name of Gemma 4's text model.
const tinyGemma4 = "gemma4_text"

// tinyGemmaWindow is the tiny Gemma 4's sliding window: short enough that
// the default job's episodes cross it.
const tinyGemmaWindow = 128

// tinyGemma is the Gemma 4 text model of model.tiny over tc (its shared
// shapes), as Gemma4TextConfig lays one out: every sixth layer and the
// last full attention, the others sliding over tinyGemmaWindow tokens with
// RoPE θ 10000; full layers of twice the head size, proportional RoPE θ
// 1e6 over a quarter of it; per-layer inputs of 16; final logits capped
// at 30; tied embeddings; with moe_block, the MoE block in every layer
// (experts GELU-tanh experts of moe_intermediate, experts_per_token a token).
func tinyGemma(c config.TinyConfig, tc torch.Config) torch.Config {
	tc.ModelType, tc.TieEmbeddings = tinyGemma4, true
	for i := range tc.Layers {
		t := torch.SlidingAttention
		if (i+1)%6 == 0 || i == tc.Layers-1 {
			t = torch.FullAttention
		}
		tc.LayerTypes = append(tc.LayerTypes, t)
	}
	tc.Gemma = &torch.Gemma4{SlidingWindow: tinyGemmaWindow, GlobalHeadDim: 2 * tc.HeadDim, GlobalKVHeads: tc.KVHeads,
		PerLayerDim: 16, PerLayerVocab: tc.Vocab, FinalSoftcap: 30, GlobalRope: "proportional", GlobalTheta: 1e6,
		GlobalPartial: 0.25}
	tc.MoE = torch.MoE{}
	if c.MoEBlock {
		tc.MoE = torch.MoE{Experts: c.Experts, ExpertsPerToken: c.ExpertsPerToken, Intermediate: c.MoEIntermediate,
			NormTopKProb: true, SparseStep: 1}
	}
	return tc
}
