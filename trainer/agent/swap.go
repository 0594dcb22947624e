package agent

import (
	"sync"

	"github.com/agentrl/agentrl/decoding"
)

// SwapDecoder is the decoder of asynchronous training's rollout role: a
// Sampler over its copy of the policy weights (NewCopySampler), and that
// copy's version. Each decoder call and each swap hold mu, so a swap
// lands between two steps.
type SwapDecoder struct {
	sampler *Sampler
	mu      sync.Mutex
	version int // of the weights in the copy
	used    int // the version the last Step sampled with
}

// NewSwapDecoder is the decoder over s, whose copy it brings up to the
// policy's weights, version v.
func NewSwapDecoder(s *Sampler, v int) (*SwapDecoder, error) {
	w := &SwapDecoder{sampler: s}
	if err := w.Swap(v); err != nil {
		return nil, err
	}
	return w, nil
}

// Slots is the sampler's number of slots.
func (w *SwapDecoder) Slots() int { return w.sampler.Slots() }

// MaxLen is the longest sequence a slot holds.
func (w *SwapDecoder) MaxLen() int { return w.sampler.MaxLen() }

// Prefill prefills slot with ids.
func (w *SwapDecoder) Prefill(slot int, ids []int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sampler.Prefill(slot, ids)
}

// PrefillBatch prefills the slots with ids, one sequence each.
func (w *SwapDecoder) PrefillBatch(slots []int, ids [][]int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sampler.Decoder().PrefillBatch(slots, ids)
}

// CopySlot copies the sequence of slot src to slot dst.
func (w *SwapDecoder) CopySlot(src, dst int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sampler.CopySlot(src, dst)
}

// Release frees slot.
func (w *SwapDecoder) Release(slot int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sampler.Release(slot)
}

// Seed seeds slot's sampling.
func (w *SwapDecoder) Seed(slot int, seed uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sampler.Seed(slot, seed)
}

// Step samples the next token of each slot with the weights in the copy,
// whose version LastUsed then reports.
func (w *SwapDecoder) Step(slots []int, s decoding.Sampling, tokens []int64, logprobs []float32) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.used = w.version
	return w.sampler.Decoder().Step(slots, s, tokens, logprobs)
}

// PendingLogits serves the gateway's top_logprobs (an agent program's
// requests).
func (w *SwapDecoder) PendingLogits(slot int) ([]float32, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sampler.Decoder().PendingLogits(slot)
}

// LastUsed is the version the last Step sampled with (rollout.Options.Version).
func (w *SwapDecoder) LastUsed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.used
}

// Current is the version of the weights the next step samples with.
func (w *SwapDecoder) Current() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.version
}

// Swap copies the policy's weights (version v) into the sampler's copy.
func (w *SwapDecoder) Swap(v int) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.sampler.Sync(); err != nil {
		return err
	}
	w.version = v
	return nil
}
