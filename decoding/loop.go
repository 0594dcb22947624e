package decoding

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Loop is the continuous-batching loop that training rollouts and serving
// both run on a decoder's slots (its Batcher). Each pass admits waiting
// sequences into free slots and prefills their prompts in one batched
// call, takes what came back for parked ones and prefills that in another,
// and decodes one token for every active slot; when no slot is active it
// waits. What a sequence is, and what its tokens do, is its Policy's.
type Loop[T any] struct {
	*Batcher[T]
	p        Policy[T]
	prefills []prefill // the pass's prefills, not yet run (flush)
	stats    counters

	tokBuf []int64
	lpBuf  []float32
}

// NewLoop schedules p's sequences on dec's slots, all free.
func NewLoop[T any](dec Decoder, p Policy[T]) *Loop[T] {
	return &Loop[T]{Batcher: NewBatcher[T](dec), p: p}
}

// Run drives the loop until the policy's Wait says nothing is left, an
// error ends it, or ctx ends (then the policy's Stop answers). It must run
// on the goroutine that owns the decoder.
func (l *Loop[T]) Run(ctx context.Context) error {
	for {
		if err := ctx.Err(); err != nil {
			return l.p.Stop(err)
		}
		// The admitted prompts and the replies are prefilled in two calls,
		// in this order: which slots a prefill holds never depends on when
		// a reply arrived (rollouts' deterministic mode).
		if err := l.p.Admit(); err != nil {
			return err
		}
		if err := l.flush(); err != nil {
			return err
		}
		if err := l.p.Arrive(); err != nil {
			return err
		}
		if err := l.flush(); err != nil {
			return err
		}
		active := l.Active()
		if len(active) == 0 {
			t0 := time.Now()
			done, err := l.p.Wait(ctx)
			if done || err != nil {
				return err
			}
			l.stats.idle.Add(int64(time.Since(t0)))
			if err := l.flush(); err != nil {
				return err
			}
			continue
		}
		if err := l.step(active); err != nil {
			return err
		}
	}
}

// Stats are what the loop has done so far. Safe from any goroutine.
func (l *Loop[T]) Stats() Stats { return l.stats.load() }

// step runs one decode call for each distinct Sampling among the active
// slots, in the order of their first slots (one call when all agree, as
// in a training run), and hands each call's tokens to the policy.
func (l *Loop[T]) step(active []int) error {
	for _, g := range l.bySampling(active) {
		if err := l.p.BeforeStep(g.slots); err != nil {
			if err := l.p.Failed(g.slots, err); err != nil {
				return err
			}
			continue
		}
		toks, lps, err := l.decode(g.slots, g.sampling)
		if err != nil {
			if err := l.p.Failed(g.slots, fmt.Errorf("decode step: %w", err)); err != nil {
				return err
			}
			continue
		}
		if err := l.p.Sampled(g.slots, toks, lps); err != nil {
			return err
		}
	}
	return nil
}

// batch is the active slots that decode in one call.
type batch struct {
	sampling Sampling
	slots    []int
}

// bySampling groups the active slots by their sequences' Sampling.
func (l *Loop[T]) bySampling(active []int) []batch {
	var out []batch
	for _, sl := range active {
		s := l.p.Sampling(l.At(sl))
		i := slices.IndexFunc(out, func(b batch) bool { return b.sampling == s })
		if i < 0 {
			out = append(out, batch{sampling: s})
			i = len(out) - 1
		}
		out[i].slots = append(out[i].slots, sl)
	}
	return out
}

// decode runs one decode call for slots and returns each slot's token and
// its log-probability, in slots' order. The slices are reused by the next
// call.
func (l *Loop[T]) decode(slots []int, s Sampling) ([]int64, []float32, error) {
	n := len(slots)
	if cap(l.tokBuf) < n {
		l.tokBuf, l.lpBuf = make([]int64, n), make([]float32, n)
	}
	toks, lps := l.tokBuf[:n], l.lpBuf[:n]
	t0 := time.Now()
	if err := l.Decoder().Step(slots, s, toks, lps); err != nil {
		return nil, nil, err
	}
	l.stats.decode.Add(int64(time.Since(t0)))
	l.stats.steps.Add(1)
	l.stats.generated.Add(int64(n))
	return toks, lps, nil
}
