package trainer

import (
	"context"
	"fmt"
	"time"

	"github.com/agentrl/agentrl/trainer/results"
	"github.com/agentrl/agentrl/trainer/warmstart"
)

// stopSignal is the channel a stop is asked on; nil is never asked.
type stopSignal <-chan struct{}

// asked reports whether a value is waiting on s (or s is closed), without
// blocking.
func (s stopSignal) asked() bool {
	select {
	case <-s:
		return true
	default:
		return false
	}
}

// Run carries out the whole job: the warm start (once; a stop asked
// during it ends Run with warmstart.ErrStopped), the evaluation of
// the baselines before RL (iteration 0), the RL iterations, the final
// evaluation, and the export of the final policy to <run>/final. A value on
// stop (nil: Options.Stop) ends the run after the current iteration, with
// a checkpoint (an iteration of dynamic sampling then makes no further
// draw). Asked while the store waits for another connection's write lock,
// it ends the wait too, and the run with an error wrapping
// store.ErrLockWaitStopped, without the checkpoint: the latest one, which
// the store covers, is where --resume continues.
func (t *Trainer) Run(ctx context.Context, stop <-chan struct{}) (*results.Table, error) {
	if stop == nil {
		stop = t.stop
	}
	t.stop = stop
	if !t.state.WarmedUp {
		if err := t.warmStart(ctx, stop); err != nil {
			return nil, err
		}
		if err := t.models.FreezeReference(); err != nil {
			return nil, err
		}
		if err := t.models.SaveBase(); err != nil {
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
	if t.cfg.Rollout.MaxStaleness > 0 && t.state.Iteration < t.cfg.Run.Iterations {
		p, err := t.startPipeline(ctx)
		if err != nil {
			return nil, err
		}
		t.batches = p
		defer t.endBatches()
	}
	stopped := false
	loopStart, done := time.Now(), 0 // for the estimate of the time left
	for t.state.Iteration < t.cfg.Run.Iterations && !stopped {
		// A stop asked of any rank stops them all after the same iteration.
		var err error
		if stopped, err = t.dist.Any(stopSignal(stop).asked()); err != nil {
			return nil, err
		}
		if stopped {
			t.log.Warn().Int("iteration", t.state.Iteration).Msg("stopping after this iteration (Ctrl-C again to stop at once)")
			continue
		}
		if err := t.state.agree(t.dist); err != nil {
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
	t.endBatches()
	if stopped {
		return nil, t.checkpoint()
	}
	if !t.dist.Leader() {
		return nil, nil
	}
	if err := t.rec.Flush(); err != nil {
		return nil, err
	}
	if err := t.models.ExportFinal(); err != nil {
		return nil, err
	}
	return t.rec.Results(t.cfg.Algorithm.Estimator)
}

// warmStart runs the supervised warm start (package warmstart) on the
// model the models give it, and tells them when it trained it.
func (t *Trainer) warmStart(ctx context.Context, stop <-chan struct{}) error {
	trained, err := warmstart.Run(ctx, warmstart.Inputs{Config: t.cfg, Model: t.models.WarmStartModel(), Fresh: t.models.Fresh(),
		Data: t.data, Agent: t.agent, Dist: t.dist, Rand: t.rng, Log: t.log, Stop: stop,
		Bar: func(total int) warmstart.Bar { return t.bar("warm start (SFT)", total) }})
	if err != nil || !trained {
		return err
	}
	return t.models.WarmStarted()
}
