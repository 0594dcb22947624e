package decoding

import "sync/atomic"

// Batcher is the table of a decoder's slots that a Loop schedules on. A
// slot is free, or claimed by a sequence of type T; a claimed slot is
// active (its sequence decodes in the next step) or parked (its sequence
// waits: for a tool call, or for a session's next request) and keeps its
// cache either way. It is used from the one goroutine that owns the
// decoder, except Busy, which is safe from any.
type Batcher[T any] struct {
	dec    Decoder
	free   []bool
	active []*T // the sequence decoding in each slot; nil when free or parked

	busy atomic.Int64

	slotsBuf []int
}

// NewBatcher keeps the slots of dec, all free.
func NewBatcher[T any](dec Decoder) *Batcher[T] {
	b := &Batcher[T]{dec: dec, free: make([]bool, dec.Slots()), active: make([]*T, dec.Slots())}
	for i := range b.free {
		b.free[i] = true
	}
	return b
}

// Decoder is the decoder whose slots b keeps.
func (b *Batcher[T]) Decoder() Decoder { return b.dec }

// Free returns up to n free slots, the lowest first.
func (b *Batcher[T]) Free(n int) []int {
	var out []int
	for sl, f := range b.free {
		if f && len(out) < n {
			out = append(out, sl)
		}
	}
	return out
}

// Activate makes x the sequence that decodes in slot: a free slot is
// claimed for it, a parked one resumes.
func (b *Batcher[T]) Activate(slot int, x *T) {
	if b.active[slot] == nil {
		b.busy.Add(1)
	}
	b.free[slot], b.active[slot] = false, x
}

// Park takes slot's sequence out of the batch; the slot stays claimed and
// keeps its cache.
func (b *Batcher[T]) Park(slot int) {
	if b.active[slot] != nil {
		b.busy.Add(-1)
	}
	b.active[slot] = nil
}

// Release frees slot and its cache, whether active or parked, and returns
// the decoder's error.
func (b *Batcher[T]) Release(slot int) error {
	b.Park(slot)
	b.free[slot] = true
	return b.dec.Release(slot)
}

// Clear empties the cache of a claimed slot, which stays claimed (a
// sequence that starts over from a new context).
func (b *Batcher[T]) Clear(slot int) error { return b.dec.Release(slot) }

// Share copies slot src's cache into each of dsts (a prompt prefilled
// once for a group of samples).
func (b *Batcher[T]) Share(src int, dsts []int) error {
	for _, sl := range dsts {
		if err := b.dec.CopySlot(src, sl); err != nil {
			return err
		}
	}
	return nil
}

// At is the sequence active in slot, nil when the slot is free or parked.
func (b *Batcher[T]) At(slot int) *T { return b.active[slot] }

// Active lists the active slots in order. The slice is reused by the next
// call.
func (b *Batcher[T]) Active() []int {
	b.slotsBuf = b.slotsBuf[:0]
	for sl, x := range b.active {
		if x != nil {
			b.slotsBuf = append(b.slotsBuf, sl)
		}
	}
	return b.slotsBuf
}

// Busy is the number of active slots. Safe from any goroutine.
func (b *Batcher[T]) Busy() int { return int(b.busy.Load()) }
