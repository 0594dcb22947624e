package gateway

import "slices"

// held is a session's idle slot and the tokens it holds: the session's
// last prompt and completion.
type held struct {
	id     string
	slot   int
	tokens []int32
	used   int64
}

// hold keeps the slot of a finished one-choice session job (tok, when not
// nil, is its last token, not yet published) for the session's next
// request, and reports whether it did.
func (e *Scheduler) hold(r *Pending, sl int, tok *Token) bool {
	if r.job.Session == "" || r.job.N != 1 {
		return false
	}
	e.drop(r.job.Session)
	r.mu.Lock()
	tokens := append([]int32(nil), r.job.Prompt...)
	for _, t := range r.tokens[0] {
		tokens = append(tokens, t.ID)
	}
	r.mu.Unlock()
	if tok != nil {
		tokens = append(tokens, tok.ID)
	}
	e.lastUse++
	h := &held{id: r.job.Session, slot: sl, tokens: tokens, used: e.lastUse}
	e.sessions[h.id], e.heldBy[sl] = h, h
	return true
}

// reuse returns the slot a session job can continue in, and how many of
// its prompt's tokens that slot holds already: when the session holds a
// slot whose tokens its prompt extends. A session whose slot it cannot
// continue in gives the slot up.
func (e *Scheduler) reuse(j Job) ([]int, int) {
	h := e.sessions[j.Session]
	if h == nil {
		return nil, 0
	}
	if j.N != 1 || len(j.Prompt) <= len(h.tokens) || !slices.Equal(j.Prompt[:len(h.tokens)], h.tokens) {
		e.drop(h.id)
		return nil, 0
	}
	delete(e.sessions, h.id)
	e.heldBy[h.slot] = nil
	return []int{h.slot}, len(h.tokens)
}

// drop releases the slot session id holds, if any.
func (e *Scheduler) drop(id string) {
	h := e.sessions[id]
	if h == nil {
		return
	}
	delete(e.sessions, id)
	e.heldBy[h.slot] = nil
	e.l.Release(h.slot)
}

// EndSession gives up the slot the session holds (its episode ended).
// Safe from any goroutine.
func (e *Scheduler) EndSession(id string) {
	e.mu.Lock()
	e.closing = append(e.closing, id)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
}
