package rollout

import (
	"fmt"
	"slices"
	"time"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/trajectory"
)

// Prefix is where the trajectories of a Request start when they continue an
// episode (algorithm.near_miss): Episode's first Turns turns, replayed
// through a fresh environment of the task and kept as context (mask 0,
// in no loss), then sampled on as any episode. The continuations are
// samples FirstSample, FirstSample+1, ... of Episode's group.
type Prefix struct {
	Episode     *trajectory.Trajectory
	Turns       int
	FirstSample int
}

// startContinuations starts req's samples from its prefix: each sample's
// environment replays the prefix's turns (a replay that answers otherwise
// than the episode was answered fails the group: continuing needs tools
// that answer alike), the prefix is prefilled once and copied into the
// other slots.
func (s *sched) startContinuations(req Request, slots []int) error {
	p := req.Prefix
	src := p.Episode
	cut := src.TurnStart(p.Turns)
	if cut < 0 || p.Turns > len(src.Turns) {
		s.finish(s.failed(req, fmt.Errorf("continue episode %s after %d turns: it has no turn after them", src.ID, p.Turns))...)
		return nil
	}
	if cut >= s.opt.MaxTotalTokens {
		s.finish(s.failed(req, fmt.Errorf("continue episode %s: its first %d turns take %d tokens, max_tokens %d", src.ID, p.Turns, cut, s.opt.MaxTotalTokens))...)
		return nil
	}
	setups := make([]Setup, req.Samples)
	turns := make([][]trajectory.Turn, req.Samples)
	for i := range setups {
		st, err := s.factory(req.Task)
		if err != nil {
			s.finish(s.failed(req, fmt.Errorf("start task %s: %w", req.Task.ID, err))...)
			return nil
		}
		if turns[i], err = s.replay(st.Env, src, p.Turns); err != nil {
			s.finish(s.failed(req, fmt.Errorf("continue episode %s: %w", src.ID, err))...)
			return nil
		}
		setups[i] = st
	}
	prefix := src.Tokens[:cut]
	s.l.Prefill(slots[0], prefix, "prefix of episode "+src.ID, func() error {
		if err := s.l.Share(slots[0], slots[1:]); err != nil {
			return fmt.Errorf("copy prefix of episode %s: %w", src.ID, err)
		}
		return nil
	})
	for i, sl := range slots {
		sample := p.FirstSample + i
		if err := s.l.Decoder().Seed(sl, trajSeed(s.opt.Seed, s.opt.Iteration, req.Group, sample, s.opt.Split)); err != nil {
			return err
		}
		// An episode whose "prompt" is the prefix, given back the
		// episode's prompt length, turn indices and turns.
		ep := s.episode(req, sample, setups[i], prefix, sl)
		ep.tr.PromptLen = src.PromptLen
		copy(ep.tr.TurnOf, src.TurnOf[:cut])
		ep.tr.Turns, ep.turn = turns[i], p.Turns
		s.l.Activate(sl, ep)
	}
	return nil
}

// replay steps env through src's first n turns as src took them and
// returns their records; every observation must be the one src was shown.
func (s *sched) replay(env Env, src *trajectory.Trajectory, n int) ([]trajectory.Turn, error) {
	out := make([]trajectory.Turn, 0, n)
	for j := 0; j < n; j++ {
		first, end := -1, -1 // the turn's generated tokens [first, end)
		for i := src.PromptLen; i < len(src.Tokens); i++ {
			if int(src.TurnOf[i]) == j && src.Mask[i] == 1 {
				if first < 0 {
					first = i
				}
				end = i + 1
			}
		}
		next := src.TurnStart(j + 1)
		if first < 0 || next < 0 {
			return nil, fmt.Errorf("turn %d has no tokens to replay", j)
		}
		ends, closes := s.chat.EndsTurn(src.Tokens[end-1])
		a := envs.Action{Text: s.chat.Decode(src.Tokens[first:end]), Tokens: end - first, TotalTokens: end,
			TurnTruncated: !ends && end-first >= s.opt.MaxTurnTokens}
		t0 := time.Now()
		res, err := env.Step(s.ctx, a)
		if err != nil {
			return nil, fmt.Errorf("replay turn %d: %w", j, err)
		}
		if res.Done {
			return nil, fmt.Errorf("replay turn %d: the environment ended the episode there, as it did not before", j)
		}
		if obs := s.chat.Observation(callNames(res), res.Responses, closes); !slices.Equal(obs, src.Tokens[end:next]) {
			return nil, fmt.Errorf("replay turn %d: the environment answered otherwise than before (a continuation needs tools that answer alike)", j)
		}
		out = append(out, turnRecord(envReply{res: res, text: a.Text, gen: a.Tokens, latency: time.Since(t0)}))
		out[j].PolicyVersion = src.Turns[j].PolicyVersion
	}
	return out, nil
}

// firstSample is the sample index of req's first trajectory.
func (r Request) firstSample() int {
	if r.Prefix != nil {
		return r.Prefix.FirstSample
	}
	return 0
}
