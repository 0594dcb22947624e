package trainer

import (
	"context"
	"hash/fnv"
	"os"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trainer/store"
)

// asyncBenchEnv, when set, runs TestAsyncWallTime (a measurement of a few
// minutes, not a check).
const asyncBenchEnv = "AGENTRL_ASYNC_BENCH"

// slowEnv answers every environment step only after a delay: 100 ms,
// or 500 ms for one task in four (by a hash of its id): a slow tool with
// a long tail of slow episodes.
type slowEnv struct {
	rollout.Env
	delay time.Duration
}

func (e slowEnv) Step(ctx context.Context, a envs.Action) (envs.StepResult, error) {
	select {
	case <-time.After(e.delay):
	case <-ctx.Done():
	}
	return e.Env.Step(ctx, a)
}

func slowTools(f rollout.Factory) rollout.Factory {
	return func(task envs.Task) (rollout.Setup, error) {
		s, err := f(task)
		h := fnv.New32a()
		h.Write([]byte(task.ID))
		d := 100 * time.Millisecond
		if h.Sum32()%4 == 0 {
			d *= 5
		}
		s.Env = slowEnv{s.Env, d}
		return s, err
	}
}

// TestAsyncWallTime measures the wall time per iteration of the reduced
// default job, with a model large enough that the update takes about as
// long as the rollout, and slow tools (slowTools), with
// rollout.max_staleness 0 and then 1, in one process, and logs both (see
// docs/algorithms.md). Set AGENTRL_ASYNC_BENCH=1 to run it.
func TestAsyncWallTime(t *testing.T) {
	if os.Getenv(asyncBenchEnv) == "" {
		t.Skip("a measurement of a few minutes: set " + asyncBenchEnv + "=1 to run it")
	}
	for _, k := range []int{0, 1} {
		cfg := asyncConfig(t.TempDir(), 6)
		cfg.Rollout.MaxStaleness = k
		cfg.Model.Tiny.Hidden, cfg.Model.Tiny.Intermediate, cfg.Model.Tiny.Layers = 256, 768, 4
		cfg.Model.Tiny.Heads, cfg.Model.Tiny.KVHeads = 4, 2
		cfg.Rollout.GroupSize = 4
		cfg.Rollout.Slots = 16
		cfg.Algorithm.Epochs = 2
		tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		tr.episode = slowTools(tr.episode)
		if _, err := tr.Run(context.Background(), nil); err != nil {
			tr.Close()
			t.Fatal(err)
		}
		ms := storedMetrics(t, tr.StorePath())
		tr.Close()
		var it, upd, ro float64
		n := 0
		for _, m := range ms[2:] { // iteration 1 waits for a whole rollout alike
			it += m.Metrics[metric.TimeIterationS]
			upd += m.Metrics[metric.TimeUpdateS]
			ro += m.Metrics[metric.TimeRolloutS]
			n++
		}
		t.Logf("max_staleness %d: iterations 2-%d: %.2f s per iteration (rollout %.2f s, update %.2f s); iteration 1 %.2f s; reward_mean by iteration %v",
			k, len(ms)-1, it/float64(n), ro/float64(n), upd/float64(n), ms[1].Metrics[metric.TimeIterationS], rewards(ms))
	}
}

func rewards(ms []store.IterationMetrics) []float64 {
	var out []float64
	for _, m := range ms[1:] {
		out = append(out, m.Metrics[metric.RewardMean])
	}
	return out
}
