package trainer

import (
	"testing"

	"github.com/agentrl/agentrl/trainer/metric"
	"github.com/agentrl/agentrl/trainer/store"
	"github.com/agentrl/agentrl/trajectory"
)

// Routing replay in a whole job: the reduced default job with a tiny Qwen3
// MoE (2 sparse layers, 4 experts, top-2) and algorithm.routing_replay
// on. Every training trajectory the store holds has the experts of every
// one of its tokens (prompt, sampled tokens and tool responses: 2 layers
// x 2 bytes a token), and the update, replaying them, measures the
// rollout and the training forward agreeing (both in float32 here) to
// rounding.
func TestRoutingReplayInJob(t *testing.T) {
	cfg := smallConfig(t.TempDir())
	cfg.Run.Iterations, cfg.Run.EvalEvery = 1, 0
	cfg.Rollout.Deterministic = true
	cfg.Device.Threads = 1
	cfg.Model.Tiny.ModelType, cfg.Model.Tiny.MoEIntermediate = "qwen3_moe", 32
	cfg.Algorithm.RoutingReplay = true
	ms, dir := runJob(t, cfg)
	if len(ms) != 2 {
		t.Fatalf("%d stored iterations, want 2", len(ms))
	}
	if gap := ms[1].Metrics[metric.LogprobMismatchMax]; !(gap < 1e-3) {
		t.Errorf("logprob_mismatch_max %v with replay, want rounding (< 1e-3)", gap)
	}
	s, err := store.OpenReadOnly(dir + "/store.db")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	trs, err := s.LoadIteration(1, trajectory.Train)
	if err != nil {
		t.Fatal(err)
	}
	if len(trs) != cfg.Rollout.BatchSize*cfg.Rollout.GroupSize {
		t.Fatalf("%d stored training trajectories, want %d", len(trs), cfg.Rollout.BatchSize*cfg.Rollout.GroupSize)
	}
	turns := 0
	for _, x := range trs {
		turns += len(x.Turns)
		if len(x.Routing) != len(x.Tokens)*2*2 {
			t.Errorf("%s: %d bytes of routing for %d tokens (%d turns), want 4 a token", x.ID, len(x.Routing), len(x.Tokens), len(x.Turns))
		}
	}
	t.Logf("%d trajectories of %d turns in all; logprob_mismatch_max %.3g, mismatch_kl %.3g",
		len(trs), turns, ms[1].Metrics[metric.LogprobMismatchMax], ms[1].Metrics[metric.MismatchKL])
}
