package trainer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentrl/agentrl/trainer/results"
)

// ErrStopped is returned by Run when a stop was asked during the warm
// start: there is no checkpoint yet, so the run starts over when run again.
var ErrStopped = errors.New("stopped during the warm start, before the first checkpoint: run it again to start over")

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

// Run carries out the whole job: the warm start (once), the evaluation of
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
		if err := t.models.freezeReference(); err != nil {
			return nil, err
		}
		if err := t.models.saveBase(); err != nil {
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
	t.endBatches()
	if stopped {
		return nil, t.checkpoint()
	}
	if !t.dist.Leader() {
		return nil, nil
	}
	if err := t.writer.Flush(); err != nil {
		return nil, err
	}
	if err := t.models.exportFinal(); err != nil {
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
