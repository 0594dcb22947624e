// Package program trains agent programs written in any language: for each
// episode it starts the configured program (agent.command) with the task
// and a gateway key naming the episode, lets it call the policy through the
// OpenAI-compatible gateway as often as it likes, scores the answer it
// prints, and turns the gateway's token ledger into trajectories (one per
// ledger segment, sharing the episode's reward).
package program

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/reward"
	"github.com/agentrl/agentrl/gateway"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

// ComponentProgram is the reward component holding the reward the program
// reported itself.
const ComponentProgram = "program"

// Runner runs the episodes of agent programs.
type Runner struct {
	Cfg     config.AgentConfig
	Format  *tokenizer.ChatFormat
	Rewards reward.Config
}

// Rollout plays every episode of reqs (Samples runs of the program per
// task) against a gateway over dec, which it drives on the calling
// goroutine (the device worker), and returns their trajectories. At most
// agent.parallel programs run at once. On cancellation the programs in
// flight are killed and their episodes returned as cancelled, with ctx's
// error.
func (r *Runner) Rollout(ctx context.Context, dec decoding.LogitsDecoder, reqs []rollout.Request, opt rollout.Options) ([]*trajectory.Trajectory, rollout.Stats, error) {
	if len(r.Cfg.Command) == 0 {
		return nil, rollout.Stats{}, errors.New("program: agent.command is empty")
	}
	start := time.Now()
	sched := gateway.NewScheduler(dec, r.Format.StopIDs())
	sched.Version = opt.Version
	keys := &gateway.Keys{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, rollout.Stats{}, fmt.Errorf("program: gateway: %w", err)
	}
	srv := &http.Server{Handler: &gateway.Handler{Scheduler: sched, Format: r.Format, Model: r.Cfg.Model, Keys: keys}}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String() + "/v1"

	parallel := r.Cfg.Parallel
	if parallel <= 0 {
		parallel = dec.Slots()
	}
	sem := make(chan struct{}, parallel)
	var (
		mu  sync.Mutex
		out []*trajectory.Trajectory
		wg  sync.WaitGroup
	)
	schedCtx, stopScheduler := context.WithCancel(ctx)
	for _, req := range reqs {
		for s := 0; s < req.Samples; s++ {
			wg.Add(1)
			go func(req rollout.Request, s int) {
				defer wg.Done()
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
				}
				var trs []*trajectory.Trajectory
				if ctx.Err() != nil {
					trs = []*trajectory.Trajectory{newTraj(req, s, opt)}
					trs[0].Stop = trajectory.StopCancelled
				} else {
					trs = r.episode(ctx, base, keys, sched, req, s, opt)
					<-sem
				}
				mu.Lock()
				defer mu.Unlock()
				out = append(out, trs...)
				if opt.OnDone != nil {
					opt.OnDone(trs[0])
				}
			}(req, s)
		}
	}
	go func() {
		wg.Wait()
		stopScheduler()
	}()
	sched.Run(schedCtx)
	wg.Wait()
	steps, gen := sched.Stats()
	st := rollout.Stats{Wall: time.Since(start), Steps: int(steps), Generated: int(gen), Trajectories: len(out)}
	if steps > 0 {
		st.MeanBatch = float64(gen) / float64(steps)
	}
	return out, st, ctx.Err()
}

// episode runs the program once for task req.Task and returns the
// episode's trajectories: one per ledger segment, or one without tokens
// when the program made no request.
func (r *Runner) episode(ctx context.Context, base string, keys *gateway.Keys, sched *gateway.Scheduler, req rollout.Request, sample int, opt rollout.Options) []*trajectory.Trajectory {
	started := time.Now()
	tr := newTraj(req, sample, opt)
	ep := &gateway.ProgramEpisode{Sampling: opt.Sampling, MaxTurnTokens: opt.MaxTurnTokens, MaxTotalTokens: opt.MaxTotalTokens,
		Seed: seedOf(opt, req.Group, sample), ID: tr.ID}
	key := keys.Open(ep)
	task := taskJSON(req.Task)
	env := append(append([]string(nil), r.Cfg.Env...), "OPENAI_BASE_URL="+base, "OPENAI_API_KEY="+key,
		"OPENAI_MODEL="+r.Cfg.Model, "AGENTRL_TASK="+string(task), "AGENTRL_EPISODE="+tr.ID)
	res := run(ctx, r.Cfg.Command, r.Cfg.Dir, env, append(task, '\n'), r.Cfg.Timeout, r.Cfg.MaxStdout, r.Cfg.StderrTail)
	keys.Close(key)
	sched.EndSession(ep.ID)
	ledger, requests, bad := ep.Record()

	tr.Stop, tr.Error = res.stop, res.err
	var answer string
	var reported float64
	if tr.Stop == "" {
		var err error
		if answer, reported, err = answerOf(res.stdout); err != nil {
			tr.Stop, tr.Error = trajectory.StopNoAnswer, err.Error()
		}
	}
	if tr.Stop == "" && bad != nil {
		tr.Stop, tr.Error = trajectory.StopBadRequest, fmt.Sprintf("the gateway refused a request (%d, param %q): %s", bad.Status, bad.Param, bad.Message)
	}
	if tr.Stop == "" {
		tr.Stop = trajectory.StopAnswer
		if ep.OverBudget() {
			tr.Stop = trajectory.StopMaxTokens
		}
		tr.Answer = answer
		tr.Correct = reward.Correct(answer, tr.Gold)
		tr.Outcome, tr.Components = r.score(answer, reported, tr.Gold)
		tr.Reward = tr.Outcome
	}
	tr.DurationMS = float64(time.Since(started)) / float64(time.Millisecond)
	for _, q := range requests {
		tr.Requests = append(tr.Requests, trajectory.Request{Index: q.Index, PromptTokens: q.PromptTokens,
			CompletionTokens: q.CompletionTokens, Link: string(q.Link), Segment: q.Segment, Finish: q.Finish,
			Status: q.Status, LatencyMS: q.LatencyMS})
	}
	if len(ledger.Segments) == 0 {
		return []*trajectory.Trajectory{tr}
	}
	var out []*trajectory.Trajectory
	for k, seg := range ledger.Segments {
		t := tr
		if k > 0 {
			c := *tr
			c.ID, c.Requests = fmt.Sprintf("%s.%d", tr.ID, k), nil
			t = &c
		}
		t.PromptLen, t.Tokens, t.Logprobs, t.Mask, t.TurnOf = seg.PromptLen, seg.Tokens, seg.Logprobs, seg.Mask, seg.TurnOf
		t.Turns = nil
		for _, u := range seg.Turns {
			t.Turns = append(t.Turns, trajectory.Turn{Text: u.Text, GenTokens: u.GenTokens, PolicyVersion: turnVersion(u, opt)})
		}
		if opt.Version != nil && len(t.Turns) > 0 {
			t.PolicyVersion = t.Turns[0].PolicyVersion
		}
		out = append(out, t)
	}
	return out
}

// turnVersion is the policy version that sampled a completion: the one
// its first token recorded when the decoder's weights change between steps
// (opt.Version set: asynchronous training), else opt.PolicyVersion, as
// for a completion without tokens.
func turnVersion(u gateway.LedgerTurn, opt rollout.Options) int {
	if opt.Version != nil && u.GenTokens > 0 {
		return u.PolicyVersion
	}
	return opt.PolicyVersion
}

// score is the outcome of an answer: the answer metrics against the gold
// answers, the configured scorer's one weighted by env.rewards.outcome, plus
// the reward the program reported (component "program").
func (r *Runner) score(answer string, reported float64, gold []string) (float64, map[string]float64) {
	c := map[string]float64{
		reward.NameEM:          reward.Best(reward.ExactMatch, answer, gold),
		reward.NameF1:          reward.Best(reward.F1, answer, gold),
		reward.NameSubstringEM: reward.Best(reward.SubstringMatch, answer, gold),
		ComponentProgram:       reported,
	}
	c[reward.NameTotal] = r.Rewards.Outcome*c[r.Rewards.Scorer] + reported
	return c[reward.NameTotal], c
}

// taskJSON is what the program is told of its task: everything but the
// gold answers and the supporting titles.
func taskJSON(t envs.Task) []byte {
	m := map[string]any{}
	for k, v := range t.Meta {
		m[k] = v
	}
	m["id"], m["question"], m["dataset"], m["hops"] = t.ID, t.Question, t.Dataset, t.Hops
	b, _ := json.Marshal(m)
	return b
}

func newTraj(req rollout.Request, sample int, opt rollout.Options) *trajectory.Trajectory {
	t := req.Task
	return &trajectory.Trajectory{
		ID:            fmt.Sprintf("%d-%s-%d-%d", opt.Iteration, opt.Split, req.Group, sample),
		TaskID:        t.ID,
		Dataset:       t.Dataset,
		Hops:          t.Hops,
		Group:         req.Group,
		Sample:        sample,
		Split:         opt.Split,
		Iteration:     opt.Iteration,
		PolicyVersion: opt.PolicyVersion,
		Question:      t.Question,
		Gold:          t.Answers,
	}
}

// seedOf derives an episode's sampling seed from the run seed and the
// episode's coordinates (splitmix64 mixing).
func seedOf(opt rollout.Options, group, sample int) uint64 {
	x := opt.Seed ^ uint64(opt.Iteration)<<40 ^ uint64(group)<<20 ^ uint64(sample)
	if opt.Split == trajectory.Eval {
		x ^= 0x9e3779b97f4a7c15
	}
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
