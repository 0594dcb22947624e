package trainer

import (
	"context"
	"time"

	"github.com/agentrl/agentrl/torch"
	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/learner"
	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/models"
	"github.com/agentrl/agentrl/trajectory"
)

// iteration is one RL iteration: rollouts, old/reference logprobs and
// values, advantages, group filter, update, metrics, evaluation, store.
func (t *Trainer) iteration(ctx context.Context, iter int) error {
	cfg := t.cfg
	start := time.Now()
	lockstep := cfg.Rollout.MaxStaleness == 0
	var engine0 torch.EngineCounters
	if lockstep {
		engine0, _ = t.sampler.Counters()
	}
	b, err := t.batches.next(ctx, iter)
	if err != nil {
		return err
	}
	m := metric.Episodes("", b.trs)
	b.rs.Timing().Add(m)
	if cfg.Algorithm.DynamicSampling {
		m[metric.NumGenBatches], m[metric.GroupsZeroVariance] = float64(b.drawn.Draws), float64(b.drawn.ZeroVariance)
	}

	tUpdate := time.Now()
	train := trainable(b.trs)
	for _, f := range b.figures {
		m[f.name] = f.value
	}
	if err := t.learn(iter, train, m); err != nil {
		return err
	}
	if err := t.batches.published(iter, t.state.OptSteps); err != nil {
		return err
	}
	m[metric.TimeUpdateS] = time.Since(tUpdate).Seconds()
	all := b.trs
	if iter == cfg.Run.Iterations || (cfg.Run.EvalEvery > 0 && iter%cfg.Run.EvalEvery == 0) {
		evalTrs, err := t.evaluateSets(ctx, iter, t.evalSets(ctx, false), m)
		if err != nil {
			return err
		}
		all = append(all, evalTrs...)
	}
	if t.device.CUDA {
		if ms, err := torch.CUDAMemory(t.device); err == nil {
			metric.Memory(m, true, ms.Allocated, ms.Peak)
		}
	} else if ms, err := torch.HostMemory(); err == nil {
		metric.Memory(m, false, ms.Reserved, ms.Peak)
	}
	if lockstep {
		t.engineFigures(m, engine0)
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
	for _, f := range b.figures { // every rank logs what its source measured (the version lag it checked)
		ev = ev.Float64(f.name, f.value)
	}
	ev.Msg("iteration")
	return t.rec.Submit(iter, m, all)
}

// engineFigures adds what the sampler's engine did this iteration (since
// the counters were before) to m: rewrites of its fused weights (once per
// change of the policy's weights is right; once a step would be a
// defect), the decode steps that ran without a graph, and on CUDA the
// graph captures (once per row count for the run is right) and the graphs
// held, logging once why they went off when a capture failed (decode
// steps then run eagerly, many times slower on a small model). Lockstep
// only: with asynchronous rollouts the engine decodes on the rollout
// role's thread while this one updates.
func (t *Trainer) engineFigures(m map[string]float64, before torch.EngineCounters) {
	c, err := t.sampler.Counters()
	if err != nil {
		return
	}
	e := metric.Engine{Refreshes: c.Refreshes - before.Refreshes, EagerSteps: c.EagerSteps - before.EagerSteps,
		Captures: c.Captures - before.Captures, CUDA: t.device.CUDA, Graphs: -1}
	defer func() { e.Add(m) }() // with the graphs where they are read
	if !t.device.CUDA {
		return
	}
	n, off, err := t.sampler.CUDAGraphs()
	if err != nil {
		return
	}
	e.Graphs = n
	if off != "" && off != t.graphsOff {
		t.graphsOff = off
		t.log.Warn().Str("why", off).Msg("CUDA graphs off: the rollouts' decode steps run eagerly")
	}
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
	if err := models.SeedDropout(t.cfg, t.dist.Rank(), iter); err != nil {
		return err
	}
	t0 := time.Now()
	r, err := t.models.learner.Update(iter, learner.NewBatch(train, t.cfg.Algorithm.PackSegments))
	if err != nil {
		return err
	}
	t.state.OptSteps = t.models.learner.Steps()
	t.log.Debug().Int("iteration", iter).Bool("old_logprobs_from_step", r.OldFromStep).
		Dur("prepare", r.Timing.Prepare).Msg("update")
	metric.Step(m, r.Losses, r.Learned, metric.With{Critic: t.models.learner.Critic() != nil,
		OverlongPenalty: t.cfg.Algorithm.OverlongBuffer.Enable, OverlongFilter: t.cfg.Algorithm.OverlongFilter})
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
		tokens += len(tr.Tokens)
	}
	m[metric.TokensPerSUpdate] = metric.UpdateThroughput(tokens, t.cfg.Algorithm.Epochs, time.Since(t0))
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
