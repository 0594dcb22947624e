package agent

import (
	"math"
	"slices"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/config"
)

// tinyNemotron is the Nemotron-H model of model.tiny over tc (its shared
// shapes): its blocks nemotron_pattern repeated to layers; Mamba-2 layers
// of heads heads of 2 x hidden/heads (expand 2), one group of B and C, a
// state of 16, conv_kernel taps and chunks of 64 tokens; its mixtures of
// experts (E) experts relu² experts of moe_intermediate, experts_per_token
// per token by sigmoid scores in one group (normalised, unscaled), and a
// relu² shared expert of intermediate.
func tinyNemotron(c config.TinyConfig, tc torch.Config) torch.Config {
	tc.RMSEps = 1e-5
	pattern := map[rune]string{'M': torch.MambaBlock, '*': torch.AttentionBlock, '-': torch.MLPBlock, 'E': torch.MoEBlock}
	letters := []rune(c.NemotronPattern)
	n := torch.Nemotron{Heads: c.Heads, HeadDim: 2 * c.Hidden / max(c.Heads, 1), Groups: 1, State: 16,
		ConvKernel: c.ConvKernel, Chunk: 64, ConvBias: true, DtMax: math.Inf(1)}
	for i := range c.Layers {
		n.Blocks = append(n.Blocks, pattern[letters[i%len(letters)]])
	}
	tc.Nemotron = n
	tc.MoE = torch.MoE{}
	if slices.Contains(n.Blocks, torch.MoEBlock) {
		tc.MoE = torch.MoE{Experts: c.Experts, ExpertsPerToken: c.ExpertsPerToken, Intermediate: c.MoEIntermediate,
			SharedIntermediate: c.Intermediate, NormTopKProb: true, SparseStep: 1, Groups: 1, TopKGroup: 1, Scaling: 1}
	}
	return tc
}
