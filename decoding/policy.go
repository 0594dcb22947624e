package decoding

import "context"

// Policy is what a user of Loop decides: which sequences wait to be
// admitted, what comes back for a parked one, how each is sampled and what
// its sampled tokens do to it (it goes on, parks for a tool, or ends).
// Training rollouts (trainer/rollout) and serving (gateway) are the two.
// A policy keeps the Loop that runs it (NewLoop) to claim and free slots
// and to queue prefills; every method runs on Run's goroutine, the one
// that owns the decoder.
type Policy[T any] interface {
	// Admit starts waiting sequences in free slots: it claims each slot
	// (Activate), seeds it and queues what the slot is to hold (Prefill).
	Admit() error
	// Arrive takes, without waiting, what came back for parked sequences
	// (a tool's reply): it queues their prefills or ends them.
	Arrive() error
	// Wait is called when no slot is active: it blocks until something
	// can go on (a reply arrived, a sequence waits to be admitted); done
	// says nothing is left and Run returns nil.
	Wait(ctx context.Context) (done bool, err error)
	// Sampling is how x's next token is sampled: the active slots decode
	// in one call per distinct Sampling.
	Sampling(x *T) Sampling
	// BeforeStep runs before the decode call for slots (serving reads the
	// logits its top logprobs come from); an error fails those slots
	// instead of decoding them (Failed).
	BeforeStep(slots []int) error
	// Sampled takes the token each slot sampled in one decode call and its
	// log-probability, in slots' order: it appends them and parks or
	// releases the slots whose sequence stops. The slices are reused by the
	// next call.
	Sampled(slots []int, tokens []int64, logprobs []float32) error
	// Failed is told that a prefill or decode call failed for the
	// sequences in slots: nil goes on, an error ends Run with it.
	Failed(slots []int, err error) error
	// Stop ends what is in flight when Run's context ends; its error is
	// Run's.
	Stop(err error) error
}
