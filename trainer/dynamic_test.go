package trainer

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
)

// Dynamic sampling at its cap, in a whole job: the reduced default job
// earns reward 0 on every episode at first (TestSynchronousLoopPinned's
// figures), so every group has zero variance and an iteration draws
// max_num_gen_batches = 3 times 4 prompts. The metrics report the 3
// draws and 12 dropped groups; the store keeps all 24 episodes, groups 0
// to 11, each marked zero_variance, each turn with its policy version;
// the data cursor moved by the 12 prompts drawn.
func TestDynamicSamplingCapInJob(t *testing.T) {
	cfg := smallConfig(t.TempDir())
	cfg.Run.Iterations, cfg.Run.EvalEvery = 1, 0
	cfg.Rollout.Deterministic = true
	cfg.Device.Threads = 1
	cfg.Algorithm.DynamicSampling = true
	cfg.Algorithm.MaxNumGenBatches = 3
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if len(tr.data.Train) < 12 {
		t.Fatalf("only %d training tasks: the test needs 12 for one pass", len(tr.data.Train))
	}
	if tr.state.Pass != 1 || tr.state.Cursor != 12 {
		t.Errorf("data pass %d cursor %d, want pass 1 cursor 12 (3 draws of 4 prompts)", tr.state.Pass, tr.state.Cursor)
	}
	path := tr.StorePath()
	ms := storedMetrics(t, path)
	if len(ms) != 2 || ms[1].Metrics[metric.NumGenBatches] != 3 || ms[1].Metrics[metric.GroupsZeroVariance] != 12 {
		t.Fatalf("iteration 1 metrics num_gen_batches %v groups_zero_variance %v, want 3 and 12", ms[1].Metrics[metric.NumGenBatches], ms[1].Metrics[metric.GroupsZeroVariance])
	}
	if ms[1].Metrics[metric.RewardMean] != 0 {
		t.Skipf("reward_mean %v: the premise (every reward 0) no longer holds", ms[1].Metrics[metric.RewardMean])
	}
	s, err := store.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	trs, err := s.LoadIteration(1, trajectory.Train)
	if err != nil {
		t.Fatal(err)
	}
	if len(trs) != 24 {
		t.Fatalf("%d stored training episodes, want 24", len(trs))
	}
	groups := map[int]bool{}
	for _, x := range trs {
		groups[x.Group] = true
		if x.Dropped != trajectory.DroppedZeroVariance {
			t.Errorf("%s dropped %q, want zero_variance", x.ID, x.Dropped)
		}
		for i, u := range x.Turns {
			if u.PolicyVersion != x.PolicyVersion {
				t.Errorf("%s turn %d policy version %d, want the episode's %d", x.ID, i, u.PolicyVersion, x.PolicyVersion)
			}
		}
	}
	if len(groups) != 12 || !groups[0] || !groups[11] {
		t.Errorf("stored groups %v, want 0..11", groups)
	}
}

// Every further draw of dynamic sampling is logged, and a stop asked
// while an iteration draws ends its drawing: with rewards that never vary
// (the premise of TestDynamicSamplingCapInJob) and a cap of 6, the stop is
// asked as draw 2 is announced, so iteration 1 makes 2 draws, not 6, logs
// the stop, trains on what it has and the run ends after it, its data
// cursor moved by the 8 prompts drawn.
func TestDynamicSamplingStops(t *testing.T) {
	cfg := smallConfig(t.TempDir())
	cfg.Run.Iterations, cfg.Run.EvalEvery = 2, 0
	cfg.Rollout.Deterministic = true
	cfg.Device.Threads = 1
	cfg.Algorithm.DynamicSampling = true
	cfg.Algorithm.MaxNumGenBatches = 6
	stop := make(chan struct{})
	logs := &stopOnLog{msg: "dynamic sampling: drawing more prompts", stop: stop}
	tr, err := New(context.Background(), cfg, Options{Log: zerolog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Run(context.Background(), stop); err != nil {
		t.Fatal(err)
	}
	if tr.state.Iteration != 1 || tr.state.Cursor != 8 {
		t.Errorf("iteration %d, data cursor %d; want the run stopped after iteration 1 at cursor 8 (2 draws of 4 prompts)", tr.state.Iteration, tr.state.Cursor)
	}
	ms := storedMetrics(t, tr.StorePath())
	if len(ms) != 2 || ms[1].Metrics[metric.NumGenBatches] != 2 {
		t.Fatalf("%d iterations stored, iteration 1's num_gen_batches %v; want 2", len(ms), ms[len(ms)-1].Metrics[metric.NumGenBatches])
	}
	if ms[1].Metrics[metric.RewardMean] != 0 {
		t.Skipf("reward_mean %v: the premise (every reward 0) no longer holds", ms[1].Metrics[metric.RewardMean])
	}
	out := logs.buf.String()
	for _, want := range []string{`"draw":2,"of":6,"informative_groups":0,"want":4,"zero_variance_groups":4,"message":"dynamic sampling: drawing more prompts"`,
		`"draws":2,"informative_groups":0,"message":"dynamic sampling: a stop was asked`} {
		if strings.Count(out, want) != 1 {
			t.Errorf("the log has %q %d times, want once:\n%s", want, strings.Count(out, want), out)
		}
	}
}

// stopOnLog keeps the log and closes stop when a line with msg is logged.
type stopOnLog struct {
	msg  string
	stop chan struct{}
	once sync.Once
	mu   sync.Mutex
	buf  strings.Builder
}

func (w *stopOnLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(string(p), w.msg) {
		w.once.Do(func() { close(w.stop) })
	}
	return len(p), nil
}
