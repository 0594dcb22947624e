// Package engine adapts torch's KV-cache engine to the rollout scheduler's
// Decoder interface, so that trainer/rollout builds and tests without
// libtorch.
package engine

import (
	"fmt"

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

// PrefillBatch prefills the slots together on a GPU. On the CPU it
// prefills them one by one: there one forward of several slots rounds
// differently from a forward of each (libtorch's CPU matrix products
// depend on the number of rows), and a slot's tokens must not depend on
// which other slots were prefilled beside it (nor move the figures
// recorded from rollouts on the CPU).
func (d Decoder) PrefillBatch(slots []int, ids [][]int64) error {
	if d.Engine.Device().CUDA {
		return d.Engine.PrefillBatch(slots, ids)
	}
	if len(slots) != len(ids) {
		return fmt.Errorf("prefill: %d slots and %d token lists", len(slots), len(ids))
	}
	for i, sl := range slots {
		if err := d.Engine.Prefill(sl, ids[i]); err != nil {
			return err
		}
	}
	return nil
}
