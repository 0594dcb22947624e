package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/trainer/config"
	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/models"
	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
)

// asyncConfig is the reduced default job with rollout.max_staleness 1.
func asyncConfig(dir string, iters int) config.Config {
	c := smallConfig(dir)
	c.Run.Name = "async"
	c.Run.Iterations, c.Run.EvalEvery, c.Run.SaveEvery = iters, 0, 1
	c.Eval.MaxEval, c.Eval.Baselines = 4, false
	c.Rollout.MaxStaleness = 1
	return c
}

// storedTrain reads the training episodes of iterations 1..n.
func storedTrain(t *testing.T, path string, n int) [][]*trajectory.Trajectory {
	t.Helper()
	s, err := store.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := make([][]*trajectory.Trajectory, n)
	for i := range out {
		if out[i], err = s.LoadIteration(i+1, trajectory.Train); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// taskSeq is the training tasks of each iteration, in group order.
func taskSeq(its [][]*trajectory.Trajectory) []string {
	var out []string
	for i, trs := range its {
		seen := map[int]string{}
		for _, x := range trs {
			seen[x.Group] = x.TaskID
		}
		for g := 0; g < len(seen); g++ {
			out = append(out, fmt.Sprintf("%d:%s", i+1, seen[g]))
		}
	}
	return out
}

// A whole asynchronous job (k = 1): every stored training turn was
// sampled by the version the iteration's update started from or the one
// before (versions rebuilt from the metrics: V_0 is the version of
// iteration 1's turns, V_i = V_{i-1} + optimizer_steps of iteration i),
// and the metrics report staleness_mean and staleness_max within 1; the
// rollout correction, at its default, weighed every update's turns.
func TestAsyncJobBound(t *testing.T) {
	cfg := asyncConfig(t.TempDir(), 4)
	ms, _ := runJob(t, cfg)
	path := filepath.Join(RunDir(cfg), "store.db")
	its := storedTrain(t, path, cfg.Run.Iterations)
	v := []int{its[0][0].Turns[0].PolicyVersion}
	for i := 1; i <= cfg.Run.Iterations; i++ {
		v = append(v, v[i-1]+int(ms[i].Metrics[metric.OptimizerSteps]))
	}
	lagged := 0
	for i, trs := range its {
		iter := i + 1
		for _, x := range trs {
			if len(x.Turns) > 0 && x.PolicyVersion != x.Turns[0].PolicyVersion {
				t.Errorf("iteration %d %s: trajectory version %d, want its first turn's %d", iter, x.ID, x.PolicyVersion, x.Turns[0].PolicyVersion)
			}
			for k, u := range x.Turns {
				oldest := v[max(iter-2, 0)]
				if u.PolicyVersion < oldest || u.PolicyVersion > v[iter-1] {
					t.Errorf("iteration %d %s turn %d: version %d, want in [%d, %d]", iter, x.ID, k, u.PolicyVersion, oldest, v[iter-1])
				}
				if u.PolicyVersion < v[iter-1] {
					lagged++
				}
			}
		}
		m := ms[iter].Metrics
		if _, ok := m[metric.StalenessMax]; !ok || m[metric.StalenessMax] > 1 || m[metric.StalenessMean] > m[metric.StalenessMax] {
			t.Errorf("iteration %d: staleness_mean %v staleness_max %v, want both present, mean <= max <= 1", iter, m[metric.StalenessMean], m[metric.StalenessMax])
		}
		if _, learned := m[metric.PolicyLoss]; learned {
			if _, ok := m[metric.RolloutWeightMean]; !ok {
				t.Errorf("iteration %d: no rollout_weight_mean: the default correction at max_staleness 1 did not weigh the turns", iter)
			}
		}
	}
	t.Logf("%d stored training turns sampled one version behind their update", lagged)
}

// Kill and resume with rollouts in flight: a run of k = 1 stopped after
// iteration 1 while the rollout role samples iteration 2 ahead, and
// resumed trains on the same prompts, iteration by iteration, as the run
// that was never stopped, and ends at the same data cursor: the
// checkpoint did not count the in-flight prompts as consumed.
func TestAsyncResumeInFlight(t *testing.T) {
	iters := 3
	ref := asyncConfig(t.TempDir(), iters)
	runJob(t, ref)
	refState := readState(t, RunDir(ref))

	cfg := asyncConfig(t.TempDir(), iters)
	stop := make(chan struct{})
	// The stop is asked as the rollout role starts iteration 2's batch,
	// which it does as soon as iteration 1's is handed over: the loop
	// sees it after iteration 1, with iteration 2's prompts in flight.
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop(), Progress: func(label string, _ int) Bar {
		if label == "iter 2 rollout" {
			close(stop)
		}
		return noBar{}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background(), stop); err != nil {
		tr.Close()
		t.Fatal(err)
	}
	if tr.state.Iteration != 1 || tr.state.Cursor != cfg.Rollout.BatchSize {
		t.Errorf("stopped at iteration %d cursor %d, want 1 and %d (iteration 2's prompts in flight, not consumed)", tr.state.Iteration, tr.state.Cursor, cfg.Rollout.BatchSize)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	cfg.Run.Resume = true
	runJob(t, cfg)
	got := readState(t, RunDir(cfg))
	if got.Cursor != refState.Cursor || got.Pass != refState.Pass || fmt.Sprint(got.Order) != fmt.Sprint(refState.Order) {
		t.Errorf("resumed run ends at pass %d cursor %d, want the uninterrupted run's pass %d cursor %d (same order)", got.Pass, got.Cursor, refState.Pass, refState.Cursor)
	}
	want := taskSeq(storedTrain(t, filepath.Join(RunDir(ref), "store.db"), iters))
	have := taskSeq(storedTrain(t, filepath.Join(RunDir(cfg), "store.db"), iters))
	if fmt.Sprint(have) != fmt.Sprint(want) {
		t.Errorf("prompts by iteration\n%v\nwant the uninterrupted run's\n%v", have, want)
	}
}

// readState reads the run state of the run's latest checkpoint.
func readState(t *testing.T, run string) runState {
	t.Helper()
	ck, _, err := models.FindCheckpoint(run)
	if err != nil || ck == "" {
		t.Fatalf("no checkpoint in %s: %v", run, err)
	}
	b, err := os.ReadFile(filepath.Join(ck, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s runState
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}
