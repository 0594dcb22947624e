// Package torchdecoder adapts torch's KV-cache engine to decoding.Decoder,
// so that the decoding contract, and the rollouts and serving built on it,
// build and test without libtorch.
package torchdecoder

import (
	"fmt"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/torch"
)

// Decoder is a *torch.Engine as a decoding.LogitsDecoder and, for a
// mixture-of-experts model recording its routing, a decoding.RoutingDecoder.
type Decoder struct{ *torch.Engine }

var (
	_ decoding.LogitsDecoder  = Decoder{}
	_ decoding.RoutingDecoder = Decoder{}
)

// Step samples one token for each slot with sampling s (see
// torch.Engine.Step).
func (d Decoder) Step(slots []int, s decoding.Sampling, tokens []int64, logprobs []float32) error {
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
