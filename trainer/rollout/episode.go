package rollout

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/reward"
	"github.com/agentrl/agentrl/trajectory"
)

// episode is a trajectory in flight. Its methods are what every engine
// does alike (the built-in scheduler and Remote): how a sampled token is
// kept, where a turn ends, how an environment reply is recorded and what
// comes after it, and how the episode ends; the engines differ only in
// how the tokens are sampled.
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

// envReply is what an environment step gives back.
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

// stepper runs environment steps: what an episode's turn becomes once it
// ended.
type stepper struct {
	chat    Chat
	render  ContextChat // the chat when its context renders, else nil
	factory Factory
	opt     Options
}

func newStepper(chat Chat, factory Factory, opt Options) stepper {
	st := stepper{chat: chat, factory: factory, opt: opt}
	if cc, ok := chat.(ContextChat); ok && cc.Context().Renders() {
		st.render = cc
	}
	return st
}

func (st stepper) newTraj(req Request, sample int) *trajectory.Trajectory {
	t := req.Task
	from := ""
	if req.Prefix != nil {
		from = req.Prefix.Episode.ID
	}
	return &trajectory.Trajectory{
		ContinuedFrom: from,
		ID:            fmt.Sprintf("%d-%s-%d-%d", st.opt.Iteration, st.opt.Split, req.Group, sample),
		TaskID:        t.ID,
		Dataset:       t.Dataset,
		Hops:          t.Hops,
		Support:       len(t.Support),
		Group:         req.Group,
		Sample:        sample,
		Split:         st.opt.Split,
		Iteration:     st.opt.Iteration,
		PolicyVersion: st.opt.PolicyVersion,
		Question:      t.Question,
		Gold:          t.Answers,
	}
}

// failed is the trajectories of a group that could not start: each
// sample ends with the error, nothing was decoded.
func (st stepper) failed(req Request, err error) []*trajectory.Trajectory {
	out := make([]*trajectory.Trajectory, req.Samples)
	for i := range out {
		out[i] = st.newTraj(req, req.firstSample()+i)
		out[i].Stop, out[i].Error = trajectory.StopError, err.Error()
	}
	return out
}

// cancelled is the trajectories of a group that never started.
func (st stepper) cancelled(req Request) []*trajectory.Trajectory {
	out := make([]*trajectory.Trajectory, req.Samples)
	for i := range out {
		out[i] = st.newTraj(req, req.firstSample()+i)
		out[i].Stop = trajectory.StopCancelled
	}
	return out
}

// group starts the episodes of req: one environment per sample and the
// prompt they share. A group that cannot start is an error for
// failed, not one of the rollout.
func (st stepper) group(req Request) ([]Setup, []int32, error) {
	setups := make([]Setup, req.Samples)
	for i := range setups {
		s, err := st.factory(req.Task)
		if err != nil {
			return nil, nil, fmt.Errorf("start task %s: %w", req.Task.ID, err)
		}
		setups[i] = s
	}
	prompt, err := st.chat.Prompt(setups[0].System, setups[0].User, setups[0].Tools)
	if err != nil {
		return nil, nil, fmt.Errorf("render prompt of task %s: %w", req.Task.ID, err)
	}
	if len(prompt) >= st.opt.MaxTotalTokens {
		return nil, nil, fmt.Errorf("task %s: prompt of %d tokens leaves no room under max_tokens %d", req.Task.ID, len(prompt), st.opt.MaxTotalTokens)
	}
	return setups, prompt, nil
}

// episode is sample i of req, its prompt in place, about to sample its
// first turn.
func (st stepper) episode(req Request, i int, setup Setup, prompt []int32, slot int) *episode {
	tr := st.newTraj(req, i)
	tr.PromptLen = len(prompt)
	tr.Tokens = append([]int32(nil), prompt...)
	tr.Logprobs = make([]float32, len(prompt))
	tr.Mask = make([]uint8, len(prompt))
	tr.TurnOf = make([]int16, len(prompt))
	for j := range tr.TurnOf {
		tr.TurnOf[j] = -1
	}
	return &episode{tr: tr, segs: []*trajectory.Trajectory{tr}, env: setup.Env, setup: setup, slot: slot,
		turnStart: len(prompt), started: time.Now()}
}

// take appends a token sampled by policy version v to ep's turn. When the
// turn ends there (a turn-ending id, the turn's or the trajectory's
// budget) it returns the action to step the environment with and whether
// the token closed the turn; otherwise nil.
func (st stepper) take(ep *episode, tok int32, lp float32, v int) (*envs.Action, bool) {
	tr := ep.tr
	if len(tr.Tokens) == ep.turnStart { // the turn's first token
		ep.turnVersion = v
		if ep.turn == 0 {
			tr.PolicyVersion = v
		}
	}
	tr.Tokens = append(tr.Tokens, tok)
	tr.Logprobs = append(tr.Logprobs, lp)
	tr.Mask = append(tr.Mask, 1)
	tr.TurnOf = append(tr.TurnOf, int16(ep.turn))
	ends, closes := st.chat.EndsTurn(tok)
	gen := len(tr.Tokens) - ep.turnStart
	truncated := !ends && gen >= st.opt.MaxTurnTokens
	budget := len(tr.Tokens) >= st.opt.MaxTotalTokens
	if !ends && !truncated && !budget {
		return nil, false
	}
	text := st.chat.Decode(tr.Tokens[ep.turnStart:])
	if st.render != nil {
		msg := tr.Tokens[ep.turnStart:]
		if closes {
			msg = msg[:len(msg)-1] // the closing token ends the message, not part of it
		}
		ep.conv = append(ep.conv, ConvTurn{Text: st.chat.Decode(msg)})
	}
	return &envs.Action{Text: text, Tokens: gen, TotalTokens: len(tr.Tokens), TurnTruncated: truncated}, closes
}

// step runs one environment step (and renders the observation). A
// panicking environment is recovered into an error.
func (st stepper) step(ctx context.Context, ep *episode, a envs.Action, closed bool) (r envReply) {
	r = envReply{ep: ep, closed: closed, text: a.Text, gen: a.Tokens}
	defer func() {
		if p := recover(); p != nil {
			r.err = fmt.Errorf("environment panicked: %v", p)
		}
	}()
	t0 := time.Now()
	r.res, r.err = ep.env.Step(ctx, a)
	r.latency = time.Since(t0)
	if r.err != nil || r.res.Done {
		return r
	}
	total := 0
	if st.render != nil {
		ep.conv[len(ep.conv)-1].Responses = r.res.Responses
		msgs := st.render.Context().Messages(ep.setup.System, ep.setup.User, ep.conv)
		if r.context, r.err = st.render.Render(msgs, ep.setup.Tools); r.err != nil {
			r.err = fmt.Errorf("render the context of turn %d: %w", len(ep.conv), r.err)
			return r
		}
		total = len(r.context)
	} else {
		r.obs = st.chat.Observation(callNames(r.res), r.res.Responses, closed)
		total = a.TotalTokens + len(r.obs)
	}
	if total >= st.opt.MaxTotalTokens {
		// The next context would spend the budget: the episode ends here.
		r.obs, r.context = nil, nil
		end, err := ep.env.Step(ctx, envs.Action{TotalTokens: total})
		if err != nil {
			r.err = err
			return r
		}
		r.res.Done, r.res.Stop = true, end.Stop
		if r.res.Stop == "" {
			r.res.Stop = trajectory.StopMaxTokens
		}
	}
	return r
}

// next is what comes after an environment reply.
type next struct {
	done bool                   // the episode ended (its Stop is set)
	seg  *trajectory.Trajectory // a new segment, whose prompt is the rendered context that did not extend the sequence
	obs  []int32                // else the observation to append before the next turn
}

// reply records r's turn on its episode and says what comes next.
func (st stepper) reply(r envReply) next {
	ep, tr := r.ep, r.ep.tr
	tr.Turns = append(tr.Turns, turnRecord(r))
	tr.Turns[len(tr.Turns)-1].PolicyVersion = ep.turnVersion
	if r.err != nil {
		tr.Stop, tr.Error = trajectory.StopError, r.err.Error()
		if errors.Is(r.err, context.Canceled) || errors.Is(r.err, context.DeadlineExceeded) {
			tr.Stop = trajectory.StopCancelled
		}
		return next{done: true}
	}
	if r.res.Done {
		tr.Stop = r.res.Stop
		tr.Answer = r.res.Answer
		tr.Correct = reward.Correct(tr.Answer, tr.Gold)
		return next{done: true}
	}
	if r.context != nil {
		if !extends(r.context, tr.Tokens) {
			return next{seg: newSegment(ep, r.context)}
		}
		return next{obs: r.context[len(tr.Tokens):]}
	}
	return next{obs: r.obs}
}

// observe appends the observation after ep's turn (mask 0) and starts its
// next turn.
func (ep *episode) observe(obs []int32) {
	tr := ep.tr
	for _, v := range obs {
		tr.Tokens = append(tr.Tokens, v)
		tr.Logprobs = append(tr.Logprobs, 0)
		tr.Mask = append(tr.Mask, 0)
		tr.TurnOf = append(tr.TurnOf, int16(ep.turn))
	}
	ep.turn++
	ep.turnStart = len(tr.Tokens)
}

// enter makes seg, whose prompt is the next turn's context, ep's segment.
func (ep *episode) enter(seg *trajectory.Trajectory) {
	ep.segs = append(ep.segs, seg)
	ep.tr, ep.turn, ep.turnStart = seg, 0, len(seg.Tokens)
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

// end scores an ended episode and returns its segments in order. Every
// segment gets the episode's ending, reward (the outcome plus the process
// rewards of all its turns) and evidence (the supporting passages all its
// turns retrieved).
func (ep *episode) end() []*trajectory.Trajectory {
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
	return ep.segments()
}

// cancel marks ep cancelled and returns its segments in order.
func (ep *episode) cancel() []*trajectory.Trajectory {
	ep.tr.Stop = trajectory.StopCancelled
	return ep.segments()
}

// segments is the episode's segments in order, the earlier ones given the
// last one's ending and reward.
func (ep *episode) segments() []*trajectory.Trajectory {
	last := ep.tr
	for _, seg := range ep.segs[:len(ep.segs)-1] {
		seg.Stop, seg.Error, seg.Answer, seg.Correct = last.Stop, last.Error, last.Answer, last.Correct
		seg.Outcome, seg.Components, seg.Reward, seg.DurationMS = last.Outcome, last.Components, last.Reward, last.DurationMS
		seg.Evidence = last.Evidence
	}
	return ep.segs
}
