// Package decoding is the contract between a policy that decodes and the
// code that drives it, shared by training rollouts (trainer/rollout) and
// serving (gateway): the Decoder a KV-cache engine implements, the
// Sampling of a decode step, and the Loop that decodes many sequences
// together in the decoder's slots (continuous batching: admission, batched
// prefill, decode steps, ending), each user supplying its Policy. It
// imports no project package, and builds without libtorch
// (decoding/torchdecoder adapts torch's engine to Decoder).
package decoding

// Decoder is a KV-cache engine with slots, each a sequence of its own
// length. torchdecoder.Decoder adapts *torch.Engine to it; tests use
// scripted stand-ins. PrefillBatch appends ids[i] to slots[i] for every i
// (distinct slots), as Prefill of each would: a scheduler gives it all the
// prefills of a round, and a decoder may run them in one call or one by
// one. Step samples one token for each slot and records its
// log-probability (see Sampling).
type Decoder interface {
	Slots() int
	MaxLen() int
	Prefill(slot int, ids []int64) error
	PrefillBatch(slots []int, ids [][]int64) error
	CopySlot(src, dst int) error
	Release(slot int) error
	Seed(slot int, seed uint64) error
	Step(slots []int, s Sampling, tokens []int64, logprobs []float32) error
}

// LogitsDecoder is a Decoder that also gives the logits of a slot's next
// step, before it is sampled (serving's top_logprobs).
type LogitsDecoder interface {
	Decoder
	PendingLogits(slot int) ([]float32, error)
}

// RoutingDecoder is a Decoder that records the experts each cached token
// of a slot took at a mixture-of-experts model's sparse layers (routing
// replay): RoutingBytes is slot's record, packed (torch.Routing.Bytes).
type RoutingDecoder interface {
	Decoder
	RoutingBytes(slot int) ([]byte, error)
}
