package rollout

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/trajectory"
)

// Generator samples assistant turns on an engine outside this process (a
// vLLM server, trainer/vllmengine): token ids in, sampled ids and their
// log-probabilities out, nothing decoded or re-encoded. It is called from
// several goroutines at once.
type Generator interface {
	Generate(ctx context.Context, r GenRequest) (Generated, error)
}

// GenRequest is one assistant turn to sample.
type GenRequest struct {
	// Context is the episode's whole sequence so far (the engine's prefix
	// cache makes sending it again cheap); the generator must not keep it.
	Context []int32
	// Sampling is the run's, read as the built-in engine reads it.
	Sampling decoding.Sampling
	// MaxTokens is the most tokens the turn may sample: what is left of the
	// turn's and the trajectory's budgets.
	MaxTokens int
	// StopIDs are the chat format's turn-ending ids: the turn ends with
	// the first one sampled, which is its last token.
	StopIDs []int32
	// Seed seeds the turn's sampling (below 2^63): derived from the run's
	// seed, the trajectory and the turn.
	Seed uint64
}

// Generated is a sampled turn: its ids and, for each, the log-probability
// of the policy that sampled it.
type Generated struct {
	Tokens   []int32
	Logprobs []float32
}

// StopLister is a Chat that lists its turn-ending ids (EndsTurn's), which
// an external engine is told to stop at.
type StopLister interface {
	StopIDs() []int32
}

// Remote runs rollouts whose turns a Generator samples: one goroutine per
// episode, at most Episodes at once. Everything else is the built-in
// engine's (the same episode code): the environment steps, the tokens,
// logprobs, mask, turn indices and turn records kept, the context modes,
// the trajectory ids and seeds. The trajectories come back in the order
// of reqs, each episode's samples and segments in order, whatever order
// they finished in.
//
// A generation that fails (the engine is gone, refuses, times out or
// answers something malformed) ends the whole rollout with an error
// naming the trajectory and turn: the episodes still running are
// cancelled. A failing environment ends only its own trajectory, as with
// the built-in engine. Every turn is sampled by Options.PolicyVersion
// (the engine's weights are not swapped during a rollout: Options.Version
// must be nil).
//
// Its Stats count the requests (Steps), the tokens generated, the
// trajectories and the tool latency; the engine's own decode and prefill
// times are not seen from here.
type Remote struct {
	Gen      Generator
	Episodes int
}

// Run produces the trajectories for reqs with r.Gen. chat must list its
// turn-ending ids (StopLister).
func (r Remote) Run(ctx context.Context, chat Chat, factory Factory, reqs []Request, opt Options) ([]*trajectory.Trajectory, Stats, error) {
	stops, err := r.validate(chat, reqs, opt)
	if err != nil {
		return nil, Stats{}, err
	}
	start := time.Now()
	run := &remoteRun{Remote: r, stepper: newStepper(chat, factory, opt), stops: stops, out: make([][][]*trajectory.Trajectory, len(reqs))}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, r.Episodes)
	var wg sync.WaitGroup
	for i, req := range reqs {
		run.out[i] = make([][]*trajectory.Trajectory, req.Samples)
		if ctx.Err() != nil {
			run.done(i, -1, run.cancelled(req))
			continue
		}
		setups, prompt, err := run.group(req)
		if err != nil {
			run.done(i, -1, run.failed(req, err))
			continue
		}
		for s := range req.Samples {
			ep := run.episode(req, s, setups[s], prompt, -1)
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				run.done(i, s, ep.cancel())
				continue
			}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				segs, err := run.play(ctx, ep, trajSeed(opt.Seed, opt.Iteration, req.Group, s, opt.Split))
				if err != nil {
					cancel(err)
				}
				run.done(i, s, segs)
			}()
		}
	}
	wg.Wait()
	var trs []*trajectory.Trajectory
	for _, group := range run.out {
		for _, segs := range group {
			trs = append(trs, segs...)
		}
	}
	run.stats.Wall = time.Since(start)
	run.stats.Trajectories = len(trs)
	if err := context.Cause(ctx); err != nil {
		return trs, run.stats, err
	}
	return trs, run.stats, nil
}

func (r Remote) validate(chat Chat, reqs []Request, opt Options) ([]int32, error) {
	if r.Episodes < 1 {
		return nil, fmt.Errorf("rollout: %d episodes at once, want at least 1", r.Episodes)
	}
	if opt.MaxTurnTokens < 1 {
		return nil, fmt.Errorf("rollout: max_turn_tokens is %d, want at least 1", opt.MaxTurnTokens)
	}
	if opt.MaxTotalTokens < 2 {
		return nil, fmt.Errorf("rollout: max_tokens is %d, want at least 2", opt.MaxTotalTokens)
	}
	if opt.Version != nil {
		return nil, errors.New("rollout: an external engine samples every turn with the weights it was given before the rollout (Options.Version must be nil)")
	}
	for _, q := range reqs {
		if q.Samples < 1 {
			return nil, fmt.Errorf("rollout: task %s asks for %d samples; want at least 1", q.Task.ID, q.Samples)
		}
		if q.Prefix != nil {
			return nil, fmt.Errorf("rollout: task %s continues episode %s, which an external engine does not implement (algorithm.near_miss)", q.Task.ID, q.Prefix.Episode.ID)
		}
	}
	sl, ok := chat.(StopLister)
	if !ok {
		return nil, fmt.Errorf("rollout: the chat format (%T) does not list its turn-ending ids, which an external engine needs", chat)
	}
	stops := sl.StopIDs()
	if len(stops) == 0 {
		return nil, errors.New("rollout: the chat format lists no turn-ending ids")
	}
	for _, id := range stops {
		if ends, _ := chat.EndsTurn(id); !ends {
			return nil, fmt.Errorf("rollout: the chat format lists %d as turn-ending, but it does not end a turn", id)
		}
	}
	return stops, nil
}

// remoteRun is one Remote.Run in flight.
type remoteRun struct {
	Remote
	stepper
	stops []int32

	mu    sync.Mutex
	out   [][][]*trajectory.Trajectory // per request, per sample: its segments
	stats Stats
}

// done keeps the segments of sample s of request i (s < 0: segs are the
// request's samples, one segment each).
func (r *remoteRun) done(i, s int, segs []*trajectory.Trajectory) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s < 0 {
		for k, tr := range segs {
			r.out[i][k] = []*trajectory.Trajectory{tr}
		}
	} else {
		r.out[i][s] = segs
	}
	if r.opt.OnDone != nil {
		for _, tr := range segs {
			r.opt.OnDone(tr)
		}
	}
}

// play runs one episode to its end, its turns seeded from seed, and
// returns its segments. A failed generation is the error, the episode
// cancelled.
func (r *remoteRun) play(ctx context.Context, ep *episode, seed uint64) ([]*trajectory.Trajectory, error) {
	for turn := 0; ; turn++ {
		if ctx.Err() != nil { // no turn starts once the rollout is cancelled
			return ep.cancel(), context.Cause(ctx)
		}
		a, closes, err := r.turn(ctx, ep, turnSeed(seed, turn))
		if err != nil {
			if ctx.Err() != nil {
				err = context.Cause(ctx)
			}
			return ep.cancel(), err
		}
		rep := r.step(ctx, ep, a, closes)
		r.mu.Lock()
		r.stats.ToolLatencyMS += float64(rep.latency) / float64(time.Millisecond)
		r.mu.Unlock()
		n := r.reply(rep)
		switch {
		case n.done:
			return ep.end(), nil
		case n.seg != nil:
			ep.enter(n.seg)
		default:
			ep.observe(n.obs)
		}
	}
}

// turn samples ep's next turn and keeps its tokens; it returns the action
// the turn ended with.
func (r *remoteRun) turn(ctx context.Context, ep *episode, seed uint64) (envs.Action, bool, error) {
	tr := ep.tr
	n := min(r.opt.MaxTurnTokens, r.opt.MaxTotalTokens-len(tr.Tokens))
	g, err := r.Gen.Generate(ctx, GenRequest{Context: tr.Tokens, Sampling: r.opt.Sampling, MaxTokens: n, StopIDs: r.stops, Seed: seed})
	if err == nil {
		err = checkGenerated(g, n)
	}
	if err != nil {
		return envs.Action{}, false, fmt.Errorf("rollout %s, turn %d: %w", tr.ID, ep.turn, err)
	}
	r.mu.Lock()
	r.stats.Steps++
	r.stats.Generated += len(g.Tokens)
	r.mu.Unlock()
	for i, tok := range g.Tokens {
		a, closes := r.take(ep, tok, g.Logprobs[i], r.opt.PolicyVersion)
		if a == nil {
			continue
		}
		if i < len(g.Tokens)-1 {
			return envs.Action{}, false, fmt.Errorf("rollout %s, turn %d: the engine sampled %d tokens after the turn ended at token %d (id %d)",
				tr.ID, ep.turn, len(g.Tokens)-1-i, i, tok)
		}
		return *a, closes, nil
	}
	return envs.Action{}, false, fmt.Errorf("rollout %s, turn %d: the engine stopped after %d tokens, with no turn-ending id and under the turn's limit of %d (is its context length, vLLM's --max-model-len, below env.max_tokens?)",
		tr.ID, ep.turn, len(g.Tokens), n)
}

// checkGenerated refuses a turn that cannot be kept as sampled.
func checkGenerated(g Generated, maxTokens int) error {
	switch {
	case len(g.Tokens) == 0:
		return errors.New("the engine sampled no tokens")
	case len(g.Tokens) > maxTokens:
		return fmt.Errorf("the engine sampled %d tokens, more than the %d asked for", len(g.Tokens), maxTokens)
	case len(g.Logprobs) != len(g.Tokens):
		return fmt.Errorf("the engine gave %d logprobs for %d tokens", len(g.Logprobs), len(g.Tokens))
	}
	for i, lp := range g.Logprobs {
		if math.IsNaN(float64(lp)) || lp > 0 {
			return fmt.Errorf("the engine gave logprob %v for token %d", lp, i)
		}
	}
	return nil
}

// turnSeed is the seed of an episode's turn-th turn (counted over all its
// segments), from the trajectory's seed (trajSeed): splitmix64 mixing,
// kept below 2^63 as vLLM's seeds are.
func turnSeed(seed uint64, turn int) uint64 {
	x := seed + uint64(turn+1)*0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return (x ^ (x >> 31)) & math.MaxInt64
}
