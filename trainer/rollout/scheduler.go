package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/reward"
	"github.com/agentrl/agentrl/trajectory"
)

// episode is a trajectory in flight.
type episode struct {
	tr        *trajectory.Trajectory // the segment being decoded
	segs      []*trajectory.Trajectory
	env       Env
	setup     Setup
	conv      []ConvTurn // the turns so far, when the context renders
	slot      int
	turn      int // index of the current assistant turn within tr
	turnStart int // index in tr.Tokens where the current turn began
	// turnVersion is the policy version that sampled the current turn's
	// first token.
	turnVersion int
	started     time.Time
}

// envReply is what a tool goroutine sends back.
type envReply struct {
	ep      *episode
	res     envs.StepResult
	obs     []int32 // observation tokens to prefill (empty when done)
	context []int32 // the next turn's whole context, when the context renders
	err     error
	closed  bool
	latency time.Duration
	text    string
	gen     int
}

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
	s := &sched{chat: chat, factory: factory, opt: opt, ctx: ctx, replies: make(chan envReply, dec.Slots())}
	s.l = decoding.NewLoop[episode](dec, s)
	if cc, ok := chat.(ContextChat); ok && cc.Context().Renders() {
		s.render = cc
	}
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
	l       *decoding.Loop[episode]
	chat    Chat
	render  ContextChat // the chat when its context renders, else nil
	factory Factory
	opt     Options
	ctx     context.Context

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

func (s *sched) newTraj(req Request, sample int) *trajectory.Trajectory {
	t := req.Task
	from := ""
	if req.Prefix != nil {
		from = req.Prefix.Episode.ID
	}
	return &trajectory.Trajectory{
		ContinuedFrom: from,
		ID:            fmt.Sprintf("%d-%s-%d-%d", s.opt.Iteration, s.opt.Split, req.Group, sample),
		TaskID:        t.ID,
		Dataset:       t.Dataset,
		Hops:          t.Hops,
		Support:       len(t.Support),
		Group:         req.Group,
		Sample:        sample,
		Split:         s.opt.Split,
		Iteration:     s.opt.Iteration,
		PolicyVersion: s.opt.PolicyVersion,
		Question:      t.Question,
		Gold:          t.Answers,
	}
}

// failGroup records a group that could not start: each sample ends with
// the error, nothing was decoded.
func (s *sched) failGroup(req Request, err error) {
	for i := 0; i < req.Samples; i++ {
		tr := s.newTraj(req, req.firstSample()+i)
		tr.Stop, tr.Error = trajectory.StopError, err.Error()
		s.finish(tr)
	}
}

func (s *sched) startGroup(req Request, slots []int) error {
	if req.Prefix != nil {
		return s.startContinuations(req, slots)
	}
	setups := make([]Setup, req.Samples)
	for i := range setups {
		st, err := s.factory(req.Task)
		if err != nil {
			s.failGroup(req, fmt.Errorf("start task %s: %w", req.Task.ID, err))
			return nil
		}
		setups[i] = st
	}
	prompt, err := s.chat.Prompt(setups[0].System, setups[0].User, setups[0].Tools)
	if err != nil {
		s.failGroup(req, fmt.Errorf("render prompt of task %s: %w", req.Task.ID, err))
		return nil
	}
	if len(prompt) >= s.opt.MaxTotalTokens {
		s.failGroup(req, fmt.Errorf("task %s: prompt of %d tokens leaves no room under max_tokens %d", req.Task.ID, len(prompt), s.opt.MaxTotalTokens))
		return nil
	}
	s.l.Prefill(slots[0], prompt, "prompt of task "+req.Task.ID, func() error {
		if err := s.l.Share(slots[0], slots[1:]); err != nil {
			return fmt.Errorf("copy prompt of task %s: %w", req.Task.ID, err)
		}
		return nil
	})
	for i, sl := range slots {
		tr := s.newTraj(req, i)
		tr.PromptLen = len(prompt)
		tr.Tokens = append([]int32(nil), prompt...)
		tr.Logprobs = make([]float32, len(prompt))
		tr.Mask = make([]uint8, len(prompt))
		tr.TurnOf = make([]int16, len(prompt))
		for j := range tr.TurnOf {
			tr.TurnOf[j] = -1
		}
		if err := s.l.Decoder().Seed(sl, trajSeed(s.opt.Seed, s.opt.Iteration, req.Group, i, s.opt.Split)); err != nil {
			return err
		}
		ep := &episode{tr: tr, segs: []*trajectory.Trajectory{tr}, env: setups[i].Env, setup: setups[i], slot: sl,
			turnStart: len(prompt), started: time.Now()}
		s.l.Activate(sl, ep)
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
		tr := ep.tr
		if len(tr.Tokens) == ep.turnStart { // the turn's first token
			ep.turnVersion = v
			if ep.turn == 0 {
				tr.PolicyVersion = v
			}
		}
		tok := int32(toks[i])
		tr.Tokens = append(tr.Tokens, tok)
		tr.Logprobs = append(tr.Logprobs, lps[i])
		tr.Mask = append(tr.Mask, 1)
		tr.TurnOf = append(tr.TurnOf, int16(ep.turn))
		ends, closes := s.chat.EndsTurn(tok)
		gen := len(tr.Tokens) - ep.turnStart
		truncated := !ends && gen >= s.opt.MaxTurnTokens
		budget := len(tr.Tokens) >= s.opt.MaxTotalTokens
		if ends || truncated || budget {
			s.l.Park(sl)
			s.inTool++
			text := s.chat.Decode(tr.Tokens[ep.turnStart:])
			if s.render != nil {
				msg := tr.Tokens[ep.turnStart:]
				if closes {
					msg = msg[:len(msg)-1] // the closing token ends the message, not part of it
				}
				ep.conv = append(ep.conv, ConvTurn{Text: s.chat.Decode(msg)})
			}
			go s.runEnv(ep, envs.Action{
				Text:          text,
				Tokens:        gen,
				TotalTokens:   len(tr.Tokens),
				TurnTruncated: truncated,
			}, closes)
		}
	}
	return nil
}

// runEnv runs one environment step (and renders the observation) off the
// device thread. A panicking environment is recovered into an error.
func (s *sched) runEnv(ep *episode, a envs.Action, closed bool) {
	r := envReply{ep: ep, closed: closed, text: a.Text, gen: a.Tokens}
	defer func() {
		if p := recover(); p != nil {
			r.err = fmt.Errorf("environment panicked: %v", p)
		}
		s.replies <- r
	}()
	t0 := time.Now()
	r.res, r.err = ep.env.Step(s.ctx, a)
	r.latency = time.Since(t0)
	if r.err != nil || r.res.Done {
		return
	}
	total := 0
	if s.render != nil {
		ep.conv[len(ep.conv)-1].Responses = r.res.Responses
		msgs := s.render.Context().Messages(ep.setup.System, ep.setup.User, ep.conv)
		if r.context, r.err = s.render.Render(msgs, ep.setup.Tools); r.err != nil {
			r.err = fmt.Errorf("render the context of turn %d: %w", len(ep.conv), r.err)
			return
		}
		total = len(r.context)
	} else {
		r.obs = s.chat.Observation(r.res.Responses, closed)
		total = a.TotalTokens + len(r.obs)
	}
	if total >= s.opt.MaxTotalTokens {
		// The next context would spend the budget: the episode ends here.
		r.obs, r.context = nil, nil
		end, err := ep.env.Step(s.ctx, envs.Action{TotalTokens: total})
		if err != nil {
			r.err = err
			return
		}
		r.res.Done, r.res.Stop = true, end.Stop
		if r.res.Stop == "" {
			r.res.Stop = trajectory.StopMaxTokens
		}
	}
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
	ep, tr := r.ep, r.ep.tr
	s.stats.ToolLatencyMS += float64(r.latency) / float64(time.Millisecond)
	tr.Turns = append(tr.Turns, turnRecord(r))
	tr.Turns[len(tr.Turns)-1].PolicyVersion = ep.turnVersion
	if r.err != nil {
		tr.Stop, tr.Error = trajectory.StopError, r.err.Error()
		if errors.Is(r.err, context.Canceled) || errors.Is(r.err, context.DeadlineExceeded) {
			tr.Stop = trajectory.StopCancelled
		}
		return s.end(ep)
	}
	if r.res.Done {
		tr.Stop = r.res.Stop
		tr.Answer = r.res.Answer
		tr.Correct = reward.Correct(tr.Answer, tr.Gold)
		return s.end(ep)
	}
	if r.context != nil {
		if !extends(r.context, tr.Tokens) {
			return s.split(ep, r.context)
		}
		r.obs = r.context[len(tr.Tokens):]
	}
	// The observation joins the round's prefill; the episode decodes again
	// once it is cached.
	resume := func() error {
		for _, v := range r.obs {
			tr.Tokens = append(tr.Tokens, v)
			tr.Logprobs = append(tr.Logprobs, 0)
			tr.Mask = append(tr.Mask, 0)
			tr.TurnOf = append(tr.TurnOf, int16(ep.turn))
		}
		ep.turn++
		ep.turnStart = len(tr.Tokens)
		s.l.Activate(ep.slot, ep)
		return nil
	}
	if len(r.obs) == 0 {
		return resume()
	}
	s.l.Prefill(ep.slot, r.obs, "observation of "+tr.ID, resume)
	return nil
}

// turnRecord turns an environment reply into the turn's record. Each call
// keeps as its result the response the model was shown for it, not the
// tool's whole output; the calls are copied, as the environment keeps its own.
func turnRecord(r envReply) trajectory.Turn {
	calls := slices.Clone(r.res.Calls)
	for i := range calls {
		calls[i].Result = ""
		if i < len(r.res.Responses) {
			calls[i].Result = r.res.Responses[i]
		}
	}
	return trajectory.Turn{Text: r.text, GenTokens: r.gen, Calls: calls, ProcessReward: r.res.ProcessReward,
		Evidence: r.res.Evidence, LatencyMS: float64(r.latency) / float64(time.Millisecond)}
}

// end finishes an episode, scores it and frees its slot. Every segment
// gets the episode's ending, reward (the outcome plus the process rewards
// of all its turns) and evidence (the supporting passages all its turns
// retrieved).
func (s *sched) end(ep *episode) error {
	tr := ep.tr
	if tr.Stop != trajectory.StopError && tr.Stop != trajectory.StopCancelled {
		tr.Outcome, tr.Components = ep.env.Outcome()
	}
	tr.Reward, tr.Evidence = tr.Outcome, 0
	for _, seg := range ep.segs {
		for _, t := range seg.Turns {
			tr.Reward += t.ProcessReward
			tr.Evidence += t.Evidence
		}
	}
	tr.DurationMS = float64(time.Since(ep.started)) / float64(time.Millisecond)
	if err := s.keepRouting(ep); err != nil {
		return err
	}
	if err := s.l.Release(ep.slot); err != nil {
		return err
	}
	s.finishSegments(ep)
	return nil
}

// finishSegments hands on an episode's segments in order, the earlier
// ones given the last one's ending and reward.
func (s *sched) finishSegments(ep *episode) {
	last := ep.tr
	for _, seg := range ep.segs[:len(ep.segs)-1] {
		seg.Stop, seg.Error, seg.Answer, seg.Correct = last.Stop, last.Error, last.Answer, last.Correct
		seg.Outcome, seg.Components, seg.Reward, seg.DurationMS = last.Outcome, last.Components, last.Reward, last.DurationMS
		seg.Evidence = last.Evidence
		s.finish(seg)
	}
	s.finish(last)
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

func (s *sched) finish(tr *trajectory.Trajectory) {
	s.out = append(s.out, tr)
	if s.opt.OnDone != nil {
		s.opt.OnDone(tr)
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
		for i := 0; i < req.Samples; i++ {
			tr := s.newTraj(req, req.firstSample()+i)
			tr.Stop = trajectory.StopCancelled
			s.finish(tr)
		}
	}
	s.queue = nil
	return err
}

func (s *sched) markCancelled(ep *episode) {
	ep.tr.Stop = trajectory.StopCancelled
	s.l.Release(ep.slot)
	s.finishSegments(ep)
}
