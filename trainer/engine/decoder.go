// Package engine adapts torch's KV-cache engine to the rollout scheduler's
// Decoder interface, so that trainer/rollout builds and tests without
// libtorch.
package engine

import (
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/rollout"
)

// Decoder is a *torch.Engine as a rollout.Decoder.
type Decoder struct{ *torch.Engine }

var _ rollout.Decoder = Decoder{}

// Step samples one token for each slot with the rollout's sampling
// settings (see torch.Engine.Step).
func (d Decoder) Step(slots []int, s rollout.Sampling, tokens []int64, logprobs []float32) error {
	return d.Engine.Step(slots, torch.Sampling(s), tokens, logprobs)
}
