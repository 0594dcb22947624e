package rollout

import (
	"fmt"
	"strings"
	"time"
)

// prefill is one slot's share of a round's batched prefill: what the slot
// appends, what it is (for errors), and what follows once it is cached.
type prefill struct {
	slot int
	ids  []int64
	what string
	done func() error
}

// queuePrefill adds tokens for slot to the round's prefill; done runs once
// they are cached (flushPrefills).
func (s *sched) queuePrefill(slot int, toks []int32, what string, done func() error) {
	ids := make([]int64, len(toks))
	for i, v := range toks {
		ids[i] = int64(v)
	}
	s.prefills = append(s.prefills, prefill{slot: slot, ids: ids, what: what, done: done})
}

// flushPrefills runs the round's queued prefills in one PrefillBatch call,
// in the order queued, then each one's follow-up.
func (s *sched) flushPrefills() error {
	if len(s.prefills) == 0 {
		return nil
	}
	ps := s.prefills
	s.prefills = nil
	slots := make([]int, len(ps))
	ids := make([][]int64, len(ps))
	whats := make([]string, len(ps))
	n := 0
	for i, p := range ps {
		slots[i], ids[i], whats[i] = p.slot, p.ids, p.what
		n += len(p.ids)
	}
	t0 := time.Now()
	if err := s.b.Decoder().PrefillBatch(slots, ids); err != nil {
		return fmt.Errorf("prefill %s: %w", strings.Join(whats, ", "), err)
	}
	for _, p := range ps {
		if err := p.done(); err != nil {
			return err
		}
	}
	s.stats.Prefill += time.Since(t0)
	s.stats.Prefilled += n
	return nil
}
