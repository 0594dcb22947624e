// Package gateway serves a policy over the OpenAI Chat Completions API and
// records, token for token, what agent programs that call it were shown and
// generated. Scheduler is the serving side of continuous batching:
// requests arrive at any time and decode together in a decoder's slots
// (decoding.Loop, run with the serving policy); Handler is the HTTP side;
// Ledger turns an episode's requests into trajectories.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/agentrl/agentrl/decoding"
)

// Job asks for N completions of one prompt; they share the prompt's
// prefill.
type Job struct {
	Prompt    []int32
	N         int
	Sampling  decoding.Sampling
	MaxTokens int      // completion tokens per choice, at least 1
	Seeds     []uint64 // one per choice
	// TopLogprobs is how many of the most likely tokens to report at each
	// position (0: none).
	TopLogprobs int
	// Stop, when set, is called after each token with the choice's
	// completion so far; true ends the choice (FinishStop).
	Stop func(choice int, completion []int32) bool
	// Session, when not "", names a conversation whose requests come one
	// after another (an agent episode): a finished one-choice job keeps its
	// slot, and the session's next job whose prompt extends that slot's
	// prompt and completion prefills only the new tokens (see session.go).
	Session string
}

// Finish says why a choice ended.
type Finish int

// The ways a choice ends.
const (
	Running   Finish = iota
	EndToken         // a stop token (kept as the completion's last token)
	StopMatch        // Job.Stop said so
	Length           // MaxTokens, or the slot's cache is full
	Cancelled        // the request's context ended (the client went away)
	Failed           // the decoder failed
)

// Alt is one of the most likely tokens at a position.
type Alt struct {
	ID      int32
	Logprob float32
}

// Token is one generated token: the behaviour log-probability the decoder
// recorded while sampling it, the alternatives when asked for, and the
// policy version that sampled it (Scheduler.Version; 0 without).
type Token struct {
	ID      int32
	Logprob float32
	Top     []Alt
	Version int
}

// Pending is a job in flight: its completions as they grow. Read it with
// Snapshot after Updated fires, or Wait for the end.
type Pending struct {
	job     Job
	ctx     context.Context
	updated chan struct{}

	mu      sync.Mutex
	tokens  [][]Token
	finish  []Finish
	err     error
	slots   []int
	pending int // choices not yet finished
}

// Updated fires (is sent on, never closed) whenever tokens were added or a
// choice finished.
func (r *Pending) Updated() <-chan struct{} { return r.updated }

// Snapshot returns choice i's tokens so far and how it ended (Running
// while it goes on).
func (r *Pending) Snapshot(i int) ([]Token, Finish) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tokens[i][:len(r.tokens[i]):len(r.tokens[i])], r.finish[i]
}

// Done reports whether every choice has finished, and the decoder's error
// when it failed.
func (r *Pending) Done() (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending == 0, r.err
}

// Wait blocks until every choice has finished or ctx ends.
func (r *Pending) Wait(ctx context.Context) error {
	for {
		if done, err := r.Done(); done {
			return err
		}
		select {
		case <-r.updated:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// cancel ends every choice of a job that never started as Cancelled.
func (r *Pending) cancel() {
	r.mu.Lock()
	for i := range r.finish {
		r.finish[i] = Cancelled
	}
	r.pending = 0
	r.mu.Unlock()
	r.notify()
}

// notify wakes a waiter of r without blocking.
func (r *Pending) notify() {
	select {
	case r.updated <- struct{}{}:
	default:
	}
}

// Scheduler decodes jobs together in a decoder's slots: it runs a
// decoding.Loop whose policy (serving) admits jobs, prefills the prompts
// admitted together in one call, ends their choices and holds sessions'
// slots. Run drives it on
// the goroutine that owns the decoder; Submit may be called from any
// goroutine.
type Scheduler struct {
	// Version, when set before Run, is called after each decode step and
	// returns the policy version that step sampled with (asynchronous
	// training swaps the decoder's weights between steps); every token of
	// the step records it.
	Version func() int

	dec   decoding.LogitsDecoder
	l     *decoding.Loop[Pending] // a slot is active while its choice decodes, parked while a session holds it
	stops map[int32]bool

	mu     sync.Mutex
	queue  []*Pending
	wake   chan struct{}
	closed error

	// owned by Run's goroutine
	choice  []int   // the choice each busy slot decodes
	tops    [][]Alt // per slot: the top logprobs of the step being decoded
	waiting []*Pending

	sessions map[string]*held // sessions holding an idle slot (Run's goroutine)
	heldBy   []*held          // per slot: the session holding it idle, or nil
	lastUse  int64            // counts session holds, to evict the oldest first
	closing  []string         // sessions ended by EndSession, under mu
}

// Stats are the decode calls the scheduler made and the tokens they
// sampled since it started: Generated/Steps is the mean batch.
func (e *Scheduler) Stats() (steps, generated int64) {
	st := e.l.Stats()
	return st.Steps, st.Generated
}

// NewScheduler serves dec; stops are the token ids that end a completion.
func NewScheduler(dec decoding.LogitsDecoder, stops []int32) *Scheduler {
	e := &Scheduler{dec: dec, stops: map[int32]bool{}, wake: make(chan struct{}, 1),
		choice: make([]int, dec.Slots()), tops: make([][]Alt, dec.Slots()), sessions: map[string]*held{}, heldBy: make([]*held, dec.Slots())}
	e.l = decoding.NewLoop[Pending](dec, serving{e})
	for _, s := range stops {
		e.stops[s] = true
	}
	return e
}

// Prefilled is the number of prompt tokens the scheduler prefilled.
func (e *Scheduler) Prefilled() int64 { return e.l.Stats().Prefilled }

// Busy is the number of slots decoding now.
func (e *Scheduler) Busy() int { return e.l.Busy() }

// Slots is how many sequences decode together at most.
func (e *Scheduler) Slots() int { return e.dec.Slots() }

// Window is the most tokens a sequence may hold, prompt and completion.
func (e *Scheduler) Window() int { return e.dec.MaxLen() }

// Submit queues a job; ctx ending cancels it and frees its slots.
func (e *Scheduler) Submit(ctx context.Context, j Job) (*Pending, error) {
	switch {
	case j.N < 1 || j.N > e.dec.Slots():
		return nil, fmt.Errorf("gateway: %d choices asked; this server decodes at most %d at once", j.N, e.dec.Slots())
	case len(j.Seeds) != j.N:
		return nil, fmt.Errorf("gateway: %d seeds for %d choices", len(j.Seeds), j.N)
	case len(j.Prompt) == 0:
		return nil, errors.New("gateway: empty prompt")
	case j.MaxTokens < 1:
		return nil, fmt.Errorf("gateway: max tokens %d, want at least 1", j.MaxTokens)
	case len(j.Prompt)+j.MaxTokens > e.dec.MaxLen():
		return nil, fmt.Errorf("gateway: %d prompt and %d completion tokens exceed the window of %d", len(j.Prompt), j.MaxTokens, e.dec.MaxLen())
	}
	r := &Pending{job: j, ctx: ctx, updated: make(chan struct{}, 1), tokens: make([][]Token, j.N),
		finish: make([]Finish, j.N), pending: j.N}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed != nil {
		return nil, e.closed
	}
	e.queue = append(e.queue, r)
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return r, nil
}

// Run decodes until ctx ends; then every job still queued or decoding ends
// Cancelled and later Submits fail. It must run on the goroutine that owns
// the decoder. A decoder error fails the jobs it touched and Run goes on.
func (e *Scheduler) Run(ctx context.Context) error { return e.l.Run(ctx) }

// anyCancelled is a channel that is ready when a waiting job's context
// ends (the first one's: they are checked again on each pass).
func (e *Scheduler) anyCancelled() <-chan struct{} {
	if len(e.waiting) > 0 {
		return e.waiting[0].ctx.Done()
	}
	return nil
}

func (e *Scheduler) shutdown(err error) {
	e.mu.Lock()
	e.closed = fmt.Errorf("gateway: the scheduler stopped: %w", err)
	e.waiting = append(e.waiting, e.queue...)
	e.queue = nil
	e.mu.Unlock()
	for _, sl := range e.l.Active() {
		e.end(sl, Cancelled)
	}
	for id := range e.sessions {
		e.drop(id)
	}
	for _, r := range e.waiting {
		r.cancel()
	}
	e.waiting = nil
}

// dropCancelled ends the choices of jobs whose context ended.
func (e *Scheduler) dropCancelled() {
	for _, sl := range e.l.Active() {
		if e.l.At(sl).ctx.Err() != nil {
			e.end(sl, Cancelled)
		}
	}
	kept := e.waiting[:0]
	for _, r := range e.waiting {
		if r.ctx.Err() == nil {
			kept = append(kept, r)
			continue
		}
		r.cancel()
	}
	e.waiting = kept
}

// admit starts waiting jobs, first come first served, while their choices
// fit in the free slots: the prompt is prefilled once, with the other
// admitted jobs' prompts, and copied.
func (e *Scheduler) admit() {
	for len(e.waiting) > 0 {
		r := e.waiting[0]
		slots, cached := e.reuse(r.job)
		if slots == nil {
			slots = e.freeSlots(r.job.N)
		}
		if slots == nil {
			return
		}
		e.waiting = e.waiting[1:]
		if err := e.start(r, slots, cached); err != nil {
			e.failJob(r, err)
		}
	}
}

// failJob ends every choice of r that still runs as Failed, with err,
// and frees its slots.
func (e *Scheduler) failJob(r *Pending, err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
	for _, sl := range r.slots {
		if e.l.At(sl) == r {
			e.end(sl, Failed)
		}
	}
	r.mu.Lock()
	for i := range r.finish {
		if r.finish[i] == Running {
			r.finish[i], r.pending = Failed, r.pending-1
		}
	}
	r.mu.Unlock()
	r.notify()
}

// freeSlots returns n slots to start a job in, taking idle sessions' slots
// (the longest idle first) when too few are free; nil when there are not
// enough.
func (e *Scheduler) freeSlots(n int) []int {
	slots := e.l.Free(n)
	for len(slots) < n {
		var oldest *held
		for _, h := range e.sessions {
			if oldest == nil || h.used < oldest.used {
				oldest = h
			}
		}
		if oldest == nil {
			return nil
		}
		e.drop(oldest.id)
		slots = append(slots, oldest.slot)
	}
	return slots
}

// start places r in slots, seeds them and queues its prompt's prefill,
// after the first cached tokens that slots[0] already holds; once it is
// cached it is copied into the other slots.
func (e *Scheduler) start(r *Pending, slots []int, cached int) error {
	r.slots = slots
	for i, sl := range slots {
		e.l.Activate(sl, r)
		e.choice[sl] = i
	}
	for i, sl := range slots {
		if err := e.dec.Seed(sl, r.job.Seeds[i]); err != nil {
			return err
		}
	}
	e.l.Prefill(slots[0], r.job.Prompt[cached:], fmt.Sprintf("a prompt of %d tokens", len(r.job.Prompt)), func() error {
		if err := e.l.Share(slots[0], slots[1:]); err != nil {
			return fmt.Errorf("copy prompt: %w", err)
		}
		return nil
	})
	return nil
}

// end finishes the choice in slot sl and frees the slot.
func (e *Scheduler) end(sl int, f Finish) { e.publish(sl, nil, f) }

// publish appends tok (when not nil) to the choice in slot sl and, unless
// f is Running, finishes the choice and frees the slot, under one lock.
func (e *Scheduler) publish(sl int, tok *Token, f Finish) {
	r, c := e.l.At(sl), e.choice[sl]
	if f != Running {
		e.l.Park(sl)
		if f != EndToken && f != StopMatch && f != Length || !e.hold(r, sl, tok) {
			e.l.Release(sl)
		}
	}
	r.mu.Lock()
	if tok != nil {
		r.tokens[c] = append(r.tokens[c], *tok)
	}
	if f != Running && r.finish[c] == Running {
		r.finish[c] = f
		r.pending--
	}
	r.mu.Unlock()
	if f != Running {
		r.notify()
	}
}

// topK is the k most likely tokens under log softmax(logits/T) (T = 1 when
// greedy), the distribution the decoder records logprobs from.
func topK(logits []float32, temperature float64, k int) []Alt {
	t := temperature
	if t <= 0 {
		t = 1
	}
	mx := math.Inf(-1)
	for _, v := range logits {
		mx = math.Max(mx, float64(v)/t)
	}
	sum := 0.0
	for _, v := range logits {
		sum += math.Exp(float64(v)/t - mx)
	}
	lse := mx + math.Log(sum)
	// The k largest, by insertion into a short sorted list (k <= 20). A NaN
	// (broken weights) is no candidate: it has no place in the order, and
	// the logprobs, NaN through lse, are refused where they are sent.
	var idx []int
	for i, v := range logits {
		if v != v || len(idx) == k && v <= logits[idx[k-1]] {
			continue
		}
		j := sort.Search(len(idx), func(j int) bool { return logits[idx[j]] < v })
		if len(idx) < k {
			idx = append(idx, 0)
		}
		copy(idx[j+1:], idx[j:len(idx)-1])
		idx[j] = i
	}
	k = min(k, len(idx))
	out := make([]Alt, k)
	for i := 0; i < k; i++ {
		out[i] = Alt{ID: int32(idx[i]), Logprob: float32(float64(logits[idx[i]])/t - lse)}
	}
	return out
}
