package gateway

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/decoding"
)

// serving is a Scheduler as the policy of its decoding.Loop: it admits
// submitted jobs, reads the top logprobs a job asks for before each decode
// call, and publishes each sampled token to its job.
type serving struct{ *Scheduler }

// Admit takes the submitted jobs and the ended sessions, drops the jobs
// whose context ended and starts waiting jobs in free slots (admit).
func (e serving) Admit() error {
	e.mu.Lock()
	e.waiting = append(e.waiting, e.queue...)
	e.queue = nil
	closing := e.closing
	e.closing = nil
	e.mu.Unlock()
	for _, id := range closing {
		e.drop(id)
	}
	e.dropCancelled()
	e.admit()
	return nil
}

// Arrive has nothing to take: a served sequence parks only while its
// session holds its slot, and the session's next request comes through
// Submit (Admit).
func (e serving) Arrive() error { return nil }

// Wait sleeps until a job is submitted or a session ends (wake), a
// waiting job's context ends, or ctx does.
func (e serving) Wait(ctx context.Context) (bool, error) {
	select {
	case <-e.wake:
	case <-ctx.Done():
	case <-e.anyCancelled():
	}
	return false, nil
}

// Sampling is the job's.
func (e serving) Sampling(r *Pending) decoding.Sampling { return r.job.Sampling }

// BeforeStep reads, for each slot whose job asks for top logprobs, the
// logits its next token is sampled from.
func (e serving) BeforeStep(slots []int) error {
	for _, sl := range slots {
		r := e.l.At(sl)
		e.tops[sl] = nil
		if k := r.job.TopLogprobs; k > 0 {
			logits, err := e.dec.PendingLogits(sl)
			if err != nil {
				return fmt.Errorf("pending logits: %w", err)
			}
			e.tops[sl] = topK(logits, r.job.Sampling.Temperature, k)
		}
	}
	return nil
}

// Sampled publishes each slot's token to its job and ends the choices
// that stop: at a stop token, when the job's Stop says so, or at its
// length.
func (e serving) Sampled(slots []int, toks []int64, lps []float32) error {
	v := 0
	if e.Version != nil {
		v = e.Version()
	}
	touched := map[*Pending]bool{}
	for i, sl := range slots {
		r, c := e.l.At(sl), e.choice[sl]
		tok := Token{ID: int32(toks[i]), Logprob: lps[i], Top: e.tops[sl], Version: v}
		r.mu.Lock()
		gen := len(r.tokens[c]) + 1
		var completion []int32
		if r.job.Stop != nil {
			completion = make([]int32, 0, gen)
			for _, t := range r.tokens[c] {
				completion = append(completion, t.ID)
			}
			completion = append(completion, tok.ID)
		}
		r.mu.Unlock()
		f := Running
		switch {
		case e.stops[tok.ID]:
			f = EndToken
		case r.job.Stop != nil && r.job.Stop(c, completion):
			f = StopMatch
		case gen >= r.job.MaxTokens || len(r.job.Prompt)+gen >= e.dec.MaxLen():
			f = Length
		}
		// The token and the choice's end are published together, so a
		// reader never sees a stop token on a running choice.
		e.publish(sl, &tok, f)
		touched[r] = true
	}
	for r := range touched {
		r.notify()
	}
	return nil
}

// Failed ends the jobs of slots with the decoder's error; serving goes on.
func (e serving) Failed(slots []int, err error) error {
	for _, sl := range slots {
		if r := e.l.At(sl); r != nil {
			e.failJob(r, err)
		}
	}
	return nil
}

// Stop cancels every job queued or decoding and refuses later Submits
// (shutdown).
func (e serving) Stop(err error) error {
	e.shutdown(err)
	return nil
}
