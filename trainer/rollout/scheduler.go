package rollout

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/trajectory"
)

// Run produces the trajectories for reqs. It must be called on the
// goroutine that owns the decoder (the device worker); environment steps
// run on their own goroutines. A failing environment or tokenizer ends
// only its own trajectory (Stop "error", the error recorded). On
// cancellation the unfinished trajectories are returned with Stop
// "cancelled" together with ctx's error.
func Run(ctx context.Context, dec decoding.Decoder, chat Chat, factory Factory, reqs []Request, opt Options) ([]*trajectory.Trajectory, Stats, error) {
	if err := opt.validate(dec, reqs); err != nil {
		return nil, Stats{}, err
	}
	start := time.Now()
	s := &sched{stepper: newStepper(chat, factory, opt), ctx: ctx, replies: make(chan envReply, dec.Slots())}
	s.l = decoding.NewLoop[episode](dec, s)
	s.queue = append(s.queue, reqs...)
	err := s.l.Run(ctx)
	ls := s.l.Stats()
	s.stats.Wall = time.Since(start)
	s.stats.Decode, s.stats.Prefill, s.stats.Idle = ls.Decode, ls.Prefill, ls.Idle
	s.stats.Steps, s.stats.Generated, s.stats.Prefilled = int(ls.Steps), int(ls.Generated), int(ls.Prefilled)
	if s.stats.Steps > 0 {
		s.stats.MeanBatch = float64(s.stats.Generated) / float64(s.stats.Steps)
	}
	s.stats.Trajectories = len(s.out)
	return s.out, s.stats, err
}

// sched is the rollouts' policy of the continuous-batching loop: an
// episode's slot is active while it decodes, parked while its environment
// steps.
type sched struct {
	stepper
	l   *decoding.Loop[episode]
	ctx context.Context

	queue   []Request
	inTool  int
	replies chan envReply
	out     []*trajectory.Trajectory
	stats   Stats
}

// Admit starts waiting groups while enough slots are free: each prompt is
// prefilled once and copied into the group's other slots, the prompts of
// all the groups admitted together in one batched prefill.
func (s *sched) Admit() error {
	for len(s.queue) > 0 {
		req := s.queue[0]
		slots := s.freeSlots(req.Samples)
		if slots == nil {
			break
		}
		s.queue = s.queue[1:]
		if err := s.startGroup(req, slots); err != nil {
			return err
		}
	}
	return nil
}

// Arrive takes every environment reply that is ready without waiting (this
// goroutine is the replies' only receiver, so each one len counts is
// there); in deterministic mode it first waits for all of them (drainAll).
func (s *sched) Arrive() error {
	if s.opt.Deterministic {
		if err := s.drainAll(); err != nil {
			return err
		}
	}
	for len(s.replies) > 0 {
		if err := s.onReply(<-s.replies); err != nil {
			return err
		}
	}
	return nil
}

// Wait, with no slot able to run, waits for an environment reply; it is
// done when no step is in flight and no group waits, and returns at once
// when a group waits for the slots that were freed.
func (s *sched) Wait(ctx context.Context) (bool, error) {
	if s.inTool == 0 {
		return len(s.queue) == 0, nil
	}
	select {
	case r := <-s.replies:
		return false, s.onReply(r)
	case <-ctx.Done():
		return false, s.cancel(ctx.Err())
	}
}

// Sampling is the run's, for every episode.
func (s *sched) Sampling(*episode) decoding.Sampling { return s.opt.Sampling }

// BeforeStep has nothing to do before a rollout's decode call.
func (s *sched) BeforeStep([]int) error { return nil }

// Failed ends the rollout: a failing decoder fails the whole batch.
func (s *sched) Failed(_ []int, err error) error { return err }

// Stop returns the unfinished trajectories as cancelled (cancel).
func (s *sched) Stop(err error) error { return s.cancel(err) }

// freeSlots returns n free slots, or nil when fewer are free.
func (s *sched) freeSlots(n int) []int {
	if out := s.l.Free(n); len(out) == n {
		return out
	}
	return nil
}

func (s *sched) startGroup(req Request, slots []int) error {
	if req.Prefix != nil {
		return s.startContinuations(req, slots)
	}
	setups, prompt, err := s.group(req)
	if err != nil {
		s.finish(s.failed(req, err)...)
		return nil
	}
	s.l.Prefill(slots[0], prompt, "prompt of task "+req.Task.ID, func() error {
		if err := s.l.Share(slots[0], slots[1:]); err != nil {
			return fmt.Errorf("copy prompt of task %s: %w", req.Task.ID, err)
		}
		return nil
	})
	for i, sl := range slots {
		if err := s.l.Decoder().Seed(sl, trajSeed(s.opt.Seed, s.opt.Iteration, req.Group, i, s.opt.Split)); err != nil {
			return err
		}
		s.l.Activate(sl, s.episode(req, i, setups[i], prompt, sl))
	}
	return nil
}

// Sampled appends each slot's token to its episode and hands every slot
// whose turn ended to its environment.
func (s *sched) Sampled(slots []int, toks []int64, lps []float32) error {
	v := s.opt.PolicyVersion
	if s.opt.Version != nil {
		v = s.opt.Version()
	}
	for i, sl := range slots {
		ep := s.l.At(sl)
		if a, closes := s.take(ep, int32(toks[i]), lps[i], v); a != nil {
			s.l.Park(sl)
			s.inTool++
			go func() { s.replies <- s.step(s.ctx, ep, *a, closes) }()
		}
	}
	return nil
}

// drainAll waits for every environment step in flight and handles the
// replies in slot order, so that which slots decode together never depends
// on tool timing (deterministic mode).
func (s *sched) drainAll() error {
	var rs []envReply
	for s.inTool > len(rs) {
		select {
		case r := <-s.replies:
			rs = append(rs, r)
		case <-s.ctx.Done():
			for _, r := range rs {
				s.replies <- r
			}
			return s.cancel(s.ctx.Err())
		}
	}
	sort.Slice(rs, func(a, b int) bool { return rs[a].ep.slot < rs[b].ep.slot })
	for _, r := range rs {
		if err := s.onReply(r); err != nil {
			return err
		}
	}
	return nil
}

func (s *sched) onReply(r envReply) error {
	s.inTool--
	ep := r.ep
	s.stats.ToolLatencyMS += float64(r.latency) / float64(time.Millisecond)
	n := s.reply(r)
	switch {
	case n.done:
		if err := s.keepRouting(ep); err != nil {
			return err
		}
		if err := s.l.Release(ep.slot); err != nil {
			return err
		}
		s.finish(ep.end()...)
	case n.seg != nil:
		// The slot is emptied and the new segment's context prefilled
		// whole, with the round's other prefills.
		if err := s.keepRouting(ep); err != nil {
			return err
		}
		if err := s.l.Clear(ep.slot); err != nil {
			return err
		}
		s.l.Prefill(ep.slot, n.seg.Tokens, "the context of "+n.seg.ID, func() error {
			ep.enter(n.seg)
			s.l.Activate(ep.slot, ep)
			return nil
		})
	default:
		// The observation joins the round's prefill; the episode decodes
		// again once it is cached.
		resume := func() error {
			ep.observe(n.obs)
			s.l.Activate(ep.slot, ep)
			return nil
		}
		if len(n.obs) == 0 {
			return resume()
		}
		s.l.Prefill(ep.slot, n.obs, "observation of "+ep.tr.ID, resume)
	}
	return nil
}

// keepRouting, with Options.RecordRouting, keeps on the segment being
// decoded the experts its tokens took, as the decoder recorded them for
// its slot (every token of the segment is cached there: the prompt, the
// observations and the sampled tokens, the last one included).
func (s *sched) keepRouting(ep *episode) error {
	if !s.opt.RecordRouting {
		return nil
	}
	b, err := s.l.Decoder().(decoding.RoutingDecoder).RoutingBytes(ep.slot)
	if err != nil {
		return fmt.Errorf("routing of %s: %w", ep.tr.ID, err)
	}
	ep.tr.Routing = b
	return nil
}

func (s *sched) finish(trs ...*trajectory.Trajectory) {
	for _, tr := range trs {
		s.out = append(s.out, tr)
		if s.opt.OnDone != nil {
			s.opt.OnDone(tr)
		}
	}
}

// cancel waits for the environment steps in flight (they see the cancelled
// context) and returns every unfinished trajectory marked cancelled.
func (s *sched) cancel(err error) error {
	for s.inTool > 0 {
		r := <-s.replies
		s.inTool--
		r.ep.tr.Turns = append(r.ep.tr.Turns, turnRecord(r))
		s.markCancelled(r.ep)
	}
	for _, sl := range s.l.Active() {
		s.markCancelled(s.l.At(sl))
	}
	for _, req := range s.queue {
		s.finish(s.cancelled(req)...)
	}
	s.queue = nil
	return err
}

func (s *sched) markCancelled(ep *episode) {
	s.l.Release(ep.slot)
	s.finish(ep.cancel()...)
}
