package agent

import (
	"math"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/config"
)

// tinyNemotron is the Nemotron-H model of model.tiny over tc (its shared
// shapes): its blocks nemotron_pattern repeated to layers; Mamba-2 layers
// of heads heads of 2 x hidden/heads (expand 2), one group of B and C, a
// state of 16, conv_kernel taps and chunks of 64 tokens.
func tinyNemotron(c config.TinyConfig, tc torch.Config) torch.Config {
	tc.RMSEps = 1e-5
	pattern := map[rune]string{'M': torch.MambaBlock, '*': torch.AttentionBlock, '-': torch.MLPBlock}
	letters := []rune(c.NemotronPattern)
	n := torch.Nemotron{Heads: c.Heads, HeadDim: 2 * c.Hidden / max(c.Heads, 1), Groups: 1, State: 16,
		ConvKernel: c.ConvKernel, Chunk: 64, ConvBias: true, DtMax: math.Inf(1)}
	for i := range c.Layers {
		n.Blocks = append(n.Blocks, pattern[letters[i%len(letters)]])
	}
	tc.Nemotron = n
	return tc
}
