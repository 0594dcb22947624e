package decoding

import (
	"fmt"
	"strings"
	"time"
)

// prefill is one slot's share of a pass's batched prefill: what the slot
// appends, what it is (for errors), and what follows once it is cached.
type prefill struct {
	slot int
	ids  []int64
	what string
	done func() error
}

// Prefill queues toks to be appended to slot's cache in the pass's one
// batched prefill call; done, when not nil, runs once they are cached (an
// error from it goes to Policy.Failed). what names the tokens in an error.
// toks must not be empty.
func (l *Loop[T]) Prefill(slot int, toks []int32, what string, done func() error) {
	ids := make([]int64, len(toks))
	for i, v := range toks {
		ids[i] = int64(v)
	}
	l.prefills = append(l.prefills, prefill{slot: slot, ids: ids, what: what, done: done})
}

// flush runs the queued prefills in one PrefillBatch call, in the order
// queued, then each one's done.
func (l *Loop[T]) flush() error {
	if len(l.prefills) == 0 {
		return nil
	}
	ps := l.prefills
	l.prefills = nil
	slots := make([]int, len(ps))
	ids := make([][]int64, len(ps))
	whats := make([]string, len(ps))
	n := 0
	for i, p := range ps {
		slots[i], ids[i], whats[i] = p.slot, p.ids, p.what
		n += len(p.ids)
	}
	t0 := time.Now()
	if err := l.Decoder().PrefillBatch(slots, ids); err != nil {
		return l.p.Failed(slots, fmt.Errorf("prefill %s: %w", strings.Join(whats, ", "), err))
	}
	for _, p := range ps {
		if p.done == nil {
			continue
		}
		if err := p.done(); err != nil {
			if err := l.p.Failed([]int{p.slot}, err); err != nil {
				return err
			}
		}
	}
	l.stats.prefill.Add(int64(time.Since(t0)))
	l.stats.prefilled.Add(int64(n))
	return nil
}
