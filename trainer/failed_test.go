package trainer

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentrl/agentrl/decoding"
	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trajectory"
)

// An iteration whose every episode failed (here: no episode can start, as
// with a broken tool) stops the run with the reason; one in which some
// episodes ran goes on, their failures counted in the metrics.
func TestEveryEpisodeFailedStops(t *testing.T) {
	tr := newBandit(t, "grpo")
	tr.bar, tr.agent = func(string, int) Bar { return noBar{} }, &agent.Agent{Chat: banditChat{}}
	rollouts := func(ids ...string) ([]*trajectory.Trajectory, error) {
		reqs := make([]rollout.Request, len(ids))
		for g, id := range ids {
			reqs[g] = rollout.Request{Task: envs.Task{ID: id}, Group: g, Samples: 2}
		}
		opt := tr.rolloutOptions(1, trajectory.Train, rollout.Options{Sampling: decoding.Sampling{Temperature: 1}})
		trs, _, err := tr.rollouts(context.Background(), "iter 1 rollout", banditFactory, reqs, opt)
		return trs, err
	}
	_, err := rollouts("broken", "broken")
	want := `iter 1 rollout: every one of its 4 episodes failed, the first with: start task broken: bandit task "broken": want context 0 or 1`
	if err == nil || err.Error() != want {
		t.Errorf("every episode failed: err = %v\nwant %s", err, want)
	}
	trs, err := rollouts("broken", "0")
	if err != nil {
		t.Fatalf("some episodes ran: err = %v, want none", err)
	}
	failed := 0
	for _, x := range trs {
		if x.Stop == trajectory.StopError {
			failed++
		}
	}
	if fmt.Sprint(len(trs), failed) != "4 2" {
		t.Errorf("%d trajectories of which %d failed, want 4 and 2", len(trs), failed)
	}
}
