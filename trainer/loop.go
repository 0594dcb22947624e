package trainer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/dist"
	"github.com/agentrl/agentrl/trainer/learner"
	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trainer/tensorboard"
	"github.com/agentrl/agentrl/trajectory"
)

func (t *Trainer) openStore(gitRev string, resumed bool) error {
	path := t.cfg.Store.Path
	if path == "" {
		path = filepath.Join(t.dir, "store.db")
	}
	s, err := store.Open(path)
	if err != nil {
		return err
	}
	t.store = s
	cj, err := json.Marshal(t.cfg)
	if err != nil {
		return err
	}
	if err := s.BeginRun(store.RunInfo{Name: t.cfg.Run.Name, ConfigJSON: string(cj), GitRev: gitRev, Start: time.Now(), Resume: resumed}); err != nil {
		return err
	}
	// Iterations after the checkpoint (or all, for a fresh start) are redone.
	after := -1
	if resumed {
		after = t.state.Iteration
	}
	n, err := s.DropAfter(after)
	if err != nil {
		return err
	}
	if n > 0 {
		t.log.Warn().Int("iterations", n).Int("after", after).Msg("dropped stored iterations that the checkpoint does not cover; they are redone")
	}
	t.writer = store.NewWriter(s, max(1, t.cfg.Store.WriterDepth))
	if t.tb, err = tensorboard.Create(filepath.Join(t.dir, "tb")); err != nil {
		return err
	}
	return nil
}

// ErrStopped is returned by Run when a stop was asked during the warm
// start: there is no checkpoint yet, so the run starts over when run again.
var ErrStopped = errors.New("stopped during the warm start, before the first checkpoint: run it again to start over")

// asked reports whether a value is waiting on (or stop is closed), without
// blocking; a nil stop is never asked.
func asked(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// Results are the final evaluation figures of a run, by method.
type Results struct {
	Methods []string                      // in table order
	Metrics map[string]map[string]float64 // method -> eval metrics (em, f1, em_hop1, ...)
	OOD     map[string]map[string]float64 // method -> the same on the out-of-domain split (none without one)
	Hops    []int
}

// Run carries out the whole job: the warm start (once), the evaluation of
// the baselines before RL (iteration 0), the RL iterations, the final
// evaluation, and the export of the final policy to <run>/final. A value on
// stop ends the run after the current iteration, with a checkpoint.
func (t *Trainer) Run(ctx context.Context, stop <-chan struct{}) (*Results, error) {
	if !t.state.WarmedUp {
		if err := t.warmStart(ctx, stop); err != nil {
			return nil, err
		}
		if err := t.freezeReference(); err != nil {
			return nil, err
		}
		if err := t.saveBase(); err != nil {
			return nil, err
		}
		if err := t.iterationZero(ctx); err != nil {
			return nil, err
		}
		t.state.WarmedUp = true
		if err := t.checkpoint(); err != nil {
			return nil, err
		}
	}
	stopped := false
	loopStart, done := time.Now(), 0 // for the estimate of the time left
	for t.state.Iteration < t.cfg.Run.Iterations && !stopped {
		// A stop asked of any rank stops them all after the same iteration.
		var err error
		if stopped, err = t.dist.Any(asked(stop)); err != nil {
			return nil, err
		}
		if stopped {
			t.log.Warn().Int("iteration", t.state.Iteration).Msg("stopping after this iteration (Ctrl-C again to stop at once)")
			continue
		}
		if err := t.agreeOnState(); err != nil {
			return nil, err
		}
		iter := t.state.Iteration + 1
		if err := t.iteration(ctx, iter); err != nil {
			return nil, fmt.Errorf("iteration %d: %w", iter, err)
		}
		t.state.Iteration = iter
		done++
		if left := t.cfg.Run.Iterations - iter; left > 0 {
			t.log.Info().Int("iteration", iter).Int("of", t.cfg.Run.Iterations).
				Str("time_left", timeLeft(time.Since(loopStart), done, left).Round(time.Second).String()).Msg("estimated time left")
		}
		last := iter == t.cfg.Run.Iterations
		if last || (t.cfg.Run.SaveEvery > 0 && iter%t.cfg.Run.SaveEvery == 0) {
			if err := t.checkpoint(); err != nil {
				return nil, err
			}
		}
	}
	if stopped {
		return nil, t.checkpoint()
	}
	if !t.dist.Leader() {
		return nil, nil
	}
	if err := t.writer.Flush(); err != nil {
		return nil, err
	}
	if err := t.exportFinal(); err != nil {
		return nil, err
	}
	return t.results()
}

// agreeOnState checks, before each iteration of a data-parallel job, that
// every rank is at the same iteration, data cursor and optimizer step (they
// draw the same tasks and shuffles from identical state; a difference
// would mean they train on different data).
func (t *Trainer) agreeOnState() error {
	s := t.state
	return t.dist.Agree("the run state", []string{"iteration", "data cursor", "data pass", "optimizer steps"},
		[]float64{float64(s.Iteration), float64(s.Cursor), float64(s.Pass), float64(s.OptSteps)})
}

// submit hands an iteration's metrics and trajectories to the store
// writer, and the metrics to TensorBoard (one scalar per metric, at the
// iteration as step); only rank 0 has them (it holds every rank's
// trajectories).
func (t *Trainer) submit(iter int, m map[string]float64, trs []*trajectory.Trajectory) error {
	if !t.dist.Leader() {
		return nil
	}
	if err := t.tb.Scalars(int64(iter), time.Now(), m); err != nil {
		return err
	}
	return t.writer.Submit(iter, m, trs)
}

// rollouts runs this rank's share of reqs (every World-th request, from
// its Rank-th) and gathers every rank's trajectories and stats, so each
// rank holds the whole batch, ordered by group and sample. f nil plays the
// policy's own episodes: the agent program's (agent.command) through the
// gateway, else the agent's ToolEnv ones. A batch in which every episode
// failed (a broken tool, an env that cannot start, an agent program that
// crashes) is an error naming the first failure: there is nothing to learn
// from or evaluate, and every rank stops alike.
func (t *Trainer) rollouts(ctx context.Context, label string, f rollout.Factory, reqs []rollout.Request, o rollout.Options) ([]*trajectory.Trajectory, rollout.Stats, error) {
	mine := dist.Shard(t.dist, reqs)
	n := 0
	for _, r := range mine {
		n += r.Samples
	}
	bar := t.bar(label, n)
	o.OnDone = func(*trajectory.Trajectory) { bar.Add(1) }
	var trs []*trajectory.Trajectory
	var rs rollout.Stats
	var err error
	switch {
	case f == nil && t.program != nil:
		trs, rs, err = t.program.Rollout(ctx, t.engine.Decoder(), mine, o)
	case f == nil:
		trs, rs, err = rollout.Run(ctx, t.engine.Decoder(), t.agent.Chat, t.agent.Episode, mine, o)
	default:
		trs, rs, err = rollout.Run(ctx, t.engine.Decoder(), t.agent.Chat, f, mine, o)
	}
	bar.Done()
	if err != nil {
		return nil, rs, err
	}
	if trs, rs, err = gatherBatch(t.dist, trs, rs); err != nil {
		return nil, rs, err
	}
	if allFailed(trs) {
		return nil, rs, fmt.Errorf("%s: every one of its %d episodes failed, the first with: %s", label, len(trs), trs[0].Error)
	}
	return trs, rs, nil
}

// allFailed reports whether trs holds episodes and every one of them
// failed (an error, or an agent program's failure).
func allFailed(trs []*trajectory.Trajectory) bool {
	for _, tr := range trs {
		if !tr.Stop.Failed() {
			return false
		}
	}
	return len(trs) > 0
}

// gatherBatch gives every rank all ranks' trajectories, ordered by group
// and sample (in one process too: the order in which trajectories finish
// depends on timing, and the update's shuffles must not), and their merged
// rollout stats.
func gatherBatch(g *dist.Group, trs []*trajectory.Trajectory, rs rollout.Stats) ([]*trajectory.Trajectory, rollout.Stats, error) {
	all, stats := trs, rs
	if g.World() > 1 {
		type share struct {
			Trs   []*trajectory.Trajectory
			Stats rollout.Stats
		}
		parts, err := dist.Gather(g, share{trs, rs})
		if err != nil {
			return nil, rs, err
		}
		all, stats = parts[0].Trs, parts[0].Stats
		for _, p := range parts[1:] {
			all = append(all, p.Trs...)
			stats = stats.Merge(p.Stats)
		}
	}
	sort.SliceStable(all, func(a, b int) bool {
		if all[a].Group != all[b].Group {
			return all[a].Group < all[b].Group
		}
		return all[a].Sample < all[b].Sample
	})
	return all, stats, nil
}

// warmStart is the supervised warm start: scripted demonstrations of the
// synthetic world (general skills or the multi-hop expert, by
// sft.warm_start) or sft.data, masked NLL on the assistant's tokens.
func (t *Trainer) warmStart(ctx context.Context, stop <-chan struct{}) error {
	c := t.cfg.SFT
	var demos [][]tokenizer.Message
	var err error
	switch {
	case c.Data != "":
		demos, err = LoadDemos(c.Data)
	case t.fresh && t.data.world != nil && c.Demos > 0 && c.WarmStart == "expert":
		demos, err = scriptedDemos(ctx, t.data.world, t.data.train, t.agent.Tools, c.Demos, c.ImperfectFraction, t.rng)
	case t.fresh && t.data.world != nil && c.Demos > 0:
		demos, err = generalDemos(ctx, t.data.world, t.data.train, t.agent.Tools, c.Demos, t.rng)
	default:
		return nil
	}
	if err != nil {
		return err
	}
	seqs, dropped, err := renderDemos(t.agent.Format, demos, t.agent.Schemas, t.cfg.Env.MaxTokens)
	if err != nil {
		return err
	}
	total := (len(seqs) + c.Batch - 1) / c.Batch * c.Epochs
	bar := t.bar("warm start (SFT)", total)
	st, err := learner.SFT(t.warmStartModel(), t.dist, seqs, learner.SFTConfig{Epochs: c.Epochs, Batch: c.Batch, Micro: t.cfg.Algorithm.MicroBatch,
		LR: c.LR, MaxGradNorm: t.cfg.Optim.MaxGradNorm, Zero: t.cfg.Dist.Zero,
		Before: func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			if stopped, err := t.dist.Any(asked(stop)); err != nil || stopped {
				return cmp.Or(err, ErrStopped)
			}
			return nil
		},
		After: func(step, total int, loss float64) {
			bar.Add(1)
			if every := max(1, total/10); step%every == 0 || step == total {
				t.log.Info().Int("step", step).Int("of", total).Float64("loss", loss).Msg("warm start")
			}
		}}, t.rng)
	bar.Done()
	if errors.Is(err, ErrStopped) {
		t.log.Warn().Int("step", st.Steps).Int("of", total).Msg("warm start stopped")
		return err
	}
	if err != nil {
		return fmt.Errorf("warm start: %w", err)
	}
	if st.Skipped > 0 {
		t.log.Warn().Int("skipped", st.Skipped).Int("steps", st.Steps).Msg("warm start: non-finite loss or gradient, steps skipped")
	}
	t.log.Info().Int("demos", st.Sequences).Int("dropped_too_long", dropped).Int("steps", st.Steps).Int("skipped", st.Skipped).
		Float64("loss_first", st.FirstLoss).Float64("loss_last", st.LastLoss).Msg("warm start done")
	if t.base != nil {
		t.baseTrained = true // the adapters (and a LoRA critic's) sit on it as it is now
		return nil
	}
	if t.learner.Mode() == learner.SeparateCritic {
		return t.learner.Critic().CopyWeightsFrom(t.learner.Policy())
	}
	return nil
}

// iterationZero evaluates the policy before RL (the "base tool call"
// baseline) and the naive-RAG baseline, on the evaluation split and on the
// out-of-domain one, stored as iteration 0.
func (t *Trainer) iterationZero(ctx context.Context) error {
	m := map[string]float64{}
	sets := t.evalSets(ctx, false)
	if t.cfg.Eval.Baselines && t.agent.Tool(search.SearchName) != nil {
		sets = append(sets, t.evalSets(ctx, true)...)
	}
	all, err := t.evaluateSets(ctx, 0, sets, m)
	if err != nil {
		return err
	}
	t.log.Info().Int("iteration", 0).Float64("eval_em", m[metric.Eval+metric.EM]).Float64("naive_rag_em", m[metric.NaiveRAG+metric.EM]).Msg("baselines evaluated")
	return t.submit(0, m, all)
}

// evalSet is one evaluation pass: its tasks, the episode factory, the
// prefix of its metrics and the tag in its trajectories' IDs.
type evalSet struct {
	tasks   []envs.Task
	factory rollout.Factory
	prefix  string
	tag     string // "" for the policy on the evaluation split
}

// evalSets are the policy's evaluation passes (rag: the naive-RAG
// baseline's): the evaluation split, then the out-of-domain split when
// the data has one.
func (t *Trainer) evalSets(ctx context.Context, rag bool) []evalSet {
	var f rollout.Factory // nil: the policy's own episodes (see rollouts)
	pre, preOOD, tag := metric.Eval, metric.EvalOOD, ""
	if rag {
		f, pre, preOOD, tag = t.agent.RAGEpisodes(ctx), metric.NaiveRAG, metric.NaiveRAGOOD, "rag"
	}
	sets := []evalSet{{t.data.eval, f, pre, tag}}
	if len(t.data.ood) > 0 {
		sets = append(sets, evalSet{t.data.ood, f, preOOD, strings.TrimPrefix(tag+"-ood", "-")})
	}
	return sets
}

// evaluateSets runs the passes, adds their metrics to m and returns their
// trajectories.
func (t *Trainer) evaluateSets(ctx context.Context, iter int, sets []evalSet, m map[string]float64) ([]*trajectory.Trajectory, error) {
	var all []*trajectory.Trajectory
	for _, s := range sets {
		trs, em, err := t.evaluate(ctx, iter, s)
		if err != nil {
			return nil, err
		}
		for k, v := range em {
			m[k] = v
		}
		all = append(all, trs...)
	}
	return all, nil
}

// evaluate runs greedy (eval temperature) episodes over one evaluation
// pass's tasks (at most eval.max_eval of them).
func (t *Trainer) evaluate(ctx context.Context, iter int, s evalSet) ([]*trajectory.Trajectory, map[string]float64, error) {
	if err := t.engine.Sync(); err != nil {
		return nil, nil, err
	}
	tasks := s.tasks
	if n := t.cfg.Eval.MaxEval; n > 0 && n < len(tasks) {
		tasks = tasks[:n]
	}
	if len(tasks) == 0 {
		return nil, map[string]float64{}, nil
	}
	reqs := make([]rollout.Request, len(tasks))
	for i, task := range tasks {
		reqs[i] = rollout.Request{Task: task, Group: i, Samples: 1}
	}
	label := "eval"
	if s.tag != "" {
		label = "eval " + s.tag
	}
	trs, _, err := t.rollouts(ctx, fmt.Sprintf("iter %d %s", iter, label), s.factory, reqs, t.rolloutOptions(iter, trajectory.Eval, rollout.Options{
		Sampling: rollout.Sampling{Temperature: t.cfg.Rollout.EvalTemperature}}))
	if err != nil {
		return nil, nil, err
	}
	if s.tag != "" {
		// The tag goes after the split, keeping the rest (group, sample and
		// a segment's ".k") so every segment's ID stays unique.
		untagged := fmt.Sprintf("%d-%s-", iter, trajectory.Eval)
		for _, tr := range trs {
			tr.ID = untagged + s.tag + "-" + strings.TrimPrefix(tr.ID, untagged)
		}
	}
	return trs, episodeMetrics(s.prefix, trs), nil
}

func (t *Trainer) rolloutOptions(iter int, split trajectory.Split, o rollout.Options) rollout.Options {
	o.MaxTurnTokens = t.cfg.Env.MaxTurnTokens
	o.MaxTotalTokens = t.cfg.Env.MaxTokens
	o.Seed = uint64(t.cfg.Run.Seed)
	o.Iteration = iter
	o.PolicyVersion = t.state.OptSteps
	o.Split = split
	o.Deterministic = t.cfg.Rollout.Deterministic
	return o
}

// nextTasks takes the next n training tasks in a shuffled order that is
// redrawn after every pass.
func (t *Trainer) nextTasks(n int) []envs.Task {
	out := make([]envs.Task, 0, n)
	for len(out) < n {
		if t.state.Cursor >= len(t.state.Order) || len(t.state.Order) != len(t.data.train) {
			t.state.Order = t.rng.Perm(len(t.data.train))
			t.state.Cursor = 0
			t.state.Pass++
		}
		out = append(out, t.data.train[t.state.Order[t.state.Cursor]])
		t.state.Cursor++
	}
	return out
}

// lrAt is the learning-rate factor at an optimizer step: linear warm-up,
// then constant, cosine or linear decay to min_lr_ratio over the run.
func (t *Trainer) lrAt(step int) float64 {
	o := t.cfg.Optim
	if o.WarmupSteps > 0 && step < o.WarmupSteps {
		return float64(step+1) / float64(o.WarmupSteps)
	}
	steps := t.cfg.Run.Iterations * t.cfg.Algorithm.Epochs * int(math.Ceil(float64(t.cfg.Rollout.BatchSize*t.cfg.Rollout.GroupSize)/float64(t.cfg.Algorithm.MiniBatch)))
	frac := math.Min(1, float64(step-o.WarmupSteps)/math.Max(1, float64(steps-o.WarmupSteps)))
	switch o.Schedule {
	case "cosine":
		return o.MinLRRatio + (1-o.MinLRRatio)*0.5*(1+math.Cos(math.Pi*frac))
	case "linear":
		return 1 - (1-o.MinLRRatio)*frac
	}
	return 1
}

// iteration is one RL iteration: rollouts, old/reference logprobs and
// values, advantages, group filter, update, metrics, evaluation, store.
func (t *Trainer) iteration(ctx context.Context, iter int) error {
	cfg := t.cfg
	start := time.Now()
	if err := t.engine.Sync(); err != nil {
		return err
	}
	tasks := t.nextTasks(cfg.Rollout.BatchSize)
	reqs := make([]rollout.Request, len(tasks))
	for i, task := range tasks {
		reqs[i] = rollout.Request{Task: task, Group: i, Samples: cfg.Rollout.GroupSize}
	}
	trs, rs, err := t.rollouts(ctx, fmt.Sprintf("iter %d rollout", iter), nil, reqs, t.rolloutOptions(iter, trajectory.Train, rollout.Options{
		Sampling: rollout.Sampling{Temperature: cfg.Rollout.Temperature, TopK: cfg.Rollout.TopK, TopP: cfg.Rollout.TopP}}))
	if err != nil {
		return err
	}
	m := episodeMetrics("", trs)
	rolloutMetrics(m, rs)

	tUpdate := time.Now()
	var train []*trajectory.Trajectory
	for _, tr := range trs {
		if !tr.Stop.Failed() && tr.Stop != trajectory.StopCancelled && tr.ActionTokens() > 0 {
			train = append(train, tr)
		}
	}
	if err := t.learn(iter, train, m); err != nil {
		return err
	}
	m[metric.TimeUpdateS] = time.Since(tUpdate).Seconds()
	all := trs
	if iter == cfg.Run.Iterations || (cfg.Run.EvalEvery > 0 && iter%cfg.Run.EvalEvery == 0) {
		evalTrs, err := t.evaluateSets(ctx, iter, t.evalSets(ctx, false), m)
		if err != nil {
			return err
		}
		all = append(all, evalTrs...)
	}
	if t.device.CUDA {
		if ms, err := torch.CUDAMemory(t.device); err == nil {
			m[metric.CUDAAllocatedGB], m[metric.CUDAPeakGB] = float64(ms.Allocated)/1e9, float64(ms.Peak)/1e9
		}
	} else if ms, err := torch.HostMemory(); err == nil {
		m[metric.HostMappedGB], m[metric.HostPeakGB] = float64(ms.Reserved)/1e9, float64(ms.Peak)/1e9
	}
	m[metric.TimeIterationS] = time.Since(start).Seconds()
	ev := t.log.Info().Int("iteration", iter).Float64("reward", m[metric.RewardMean]).Float64("em", m[metric.EM]).
		Float64("entropy", m[metric.Entropy]).Float64("approx_kl", m[metric.ApproxKL]).Float64("mismatch_kl", m[metric.MismatchKL]).
		Float64("mismatch_ratio_min", m[metric.MismatchRatioMin]).Float64("mismatch_ratio_max", m[metric.MismatchRatioMax]).
		Float64("mismatch_beyond", m[metric.MismatchBeyond]).Float64("tok/s", m[metric.TokensPerSRollout]).
		Float64("s", m[metric.TimeIterationS])
	if v, ok := m[metric.Eval+metric.EM]; ok {
		ev = ev.Float64("eval_em", v)
	}
	ev.Msg("iteration")
	return t.submit(iter, m, all)
}

// learn updates the models on the training trajectories of an iteration
// (the learner's Update) and adds the update's metrics to m.
func (t *Trainer) learn(iter int, train []*trajectory.Trajectory, m map[string]float64) error {
	if len(train) == 0 {
		t.log.Warn().Int("iteration", iter).Msg("no trajectory to learn from")
		return nil
	}
	if err := torch.EmptyCache(); err != nil {
		return err
	}
	if err := t.seedDropout(iter); err != nil {
		return err
	}
	t0 := time.Now()
	r, err := t.learner.Update(iter, train)
	if err != nil {
		return err
	}
	t.state.OptSteps = t.learner.Steps()
	t.log.Debug().Int("iteration", iter).Bool("old_logprobs_from_step", r.OldFromStep).
		Dur("prepare", r.Timing.Prepare).Msg("update")
	updateMetrics(m, r, t.learner.Critic() != nil)
	mm := r.Mismatch
	if w := mm.Warning(iter, t.cfg.Algorithm.MismatchWarnKL); w != "" {
		t.log.Warn().Int("iteration", iter).Float64("mismatch_kl", mm.KL).Float64("ratio_max", mm.RatioMax).
			Float64("ratio_min", mm.RatioMin).Float64("beyond_bound", mm.BeyondBound).Msg(w)
	}
	if err := t.echoTrap(iter, m); err != nil {
		return err
	}
	tokens := 0
	for _, tr := range r.Trained {
		tokens += len(tr.Tokens) * t.cfg.Algorithm.Epochs
	}
	m[metric.TokensPerSUpdate] = float64(tokens) / time.Since(t0).Seconds()
	if r.Skipped > 0 {
		t.log.Warn().Int("iteration", iter).Int("skipped", r.Skipped).Strs("trajectories", r.SkippedIDs).
			Msg("non-finite loss or gradient: update skipped")
	}
	return nil
}

// echoTrap watches the signals that precede RAGEN's echo trap (the
// within-group reward std and the entropy collapsing, gradient-norm
// spikes) over the iterations of this process, logs a warning for each one
// raised and counts them in the metric echo_trap_signals. It only reports.
func (t *Trainer) echoTrap(iter int, m map[string]float64) error {
	if t.echo == nil {
		var err error
		if t.echo, err = algo.NewEchoTrap(algo.DefaultEchoTrapConfig()); err != nil {
			return err
		}
	}
	ws := t.echo.Observe(algo.IterMetrics{Iteration: iter, RewardStd: m[metric.GroupRewardStd], GradNorm: m[metric.GradNorm],
		Entropy: m[metric.Entropy]})
	for _, w := range ws {
		t.log.Warn().Int("iteration", iter).Str("signal", w.Signal).Float64("value", w.Value).
			Float64("reference", w.Reference).Msg("echo trap")
	}
	m[metric.EchoTrapSignals] = float64(len(ws))
	return nil
}

// results reads the run's final table from its store.
func (t *Trainer) results() (*Results, error) {
	ms, err := t.store.Metrics()
	if err != nil {
		return nil, err
	}
	return resultsOf(ms, "RL ("+t.cfg.Algorithm.Estimator+")"), nil
}

// ReadResults reads the final table of a finished run from its store:
// the naive-RAG and base-tool-call baselines (iteration 0) and the policy's
// last evaluation, named rl.
func ReadResults(storePath, rl string) (*Results, error) {
	s, err := store.OpenReadOnly(storePath)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	ms, err := s.Metrics()
	if err != nil {
		return nil, err
	}
	return resultsOf(ms, rl), nil
}

func resultsOf(ms []store.IterationMetrics, rl string) *Results {
	r := &Results{Metrics: map[string]map[string]float64{}, OOD: map[string]map[string]float64{}}
	pickPrefix := func(m map[string]float64, prefix string) map[string]float64 {
		out := map[string]float64{}
		for k, v := range m {
			if len(k) > len(prefix) && k[:len(prefix)] == prefix {
				out[k[len(prefix):]] = v
			}
		}
		return out
	}
	ood := func(method string, m map[string]float64, prefix string) {
		if o := pickPrefix(m, prefix); len(o) > 0 {
			r.OOD[method] = o
		}
	}
	var last map[string]float64
	for _, it := range ms {
		if it.Iteration == 0 {
			if rag := pickPrefix(it.Metrics, metric.NaiveRAG); len(rag) > 0 {
				r.Methods = append(r.Methods, "Naive RAG")
				r.Metrics["Naive RAG"] = rag
				ood("Naive RAG", it.Metrics, metric.NaiveRAGOOD)
			}
			r.Methods = append(r.Methods, "Base Tool Call")
			r.Metrics["Base Tool Call"] = pickPrefix(it.Metrics, metric.Eval)
			ood("Base Tool Call", it.Metrics, metric.EvalOOD)
		} else if _, ok := it.Metrics[metric.Eval+metric.EM]; ok {
			last = it.Metrics
		}
	}
	if last != nil {
		r.Methods = append(r.Methods, rl)
		r.Metrics[rl] = pickPrefix(last, metric.Eval)
		ood(rl, last, metric.EvalOOD)
	}
	for h := 1; h <= 4; h++ {
		for _, mm := range r.Metrics {
			if _, ok := mm[metric.EMHop(h)]; ok {
				r.Hops = append(r.Hops, h)
				break
			}
		}
	}
	return r
}
