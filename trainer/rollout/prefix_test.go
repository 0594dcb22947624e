package rollout

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/trajectory"
)

// A continuation keeps its episode's first turns as context (mask 0, no
// logprobs), replays them through a fresh environment (their records,
// process rewards and evidence again), samples on from there, and is
// numbered on in the episode's group.
func TestContinuationReplaysPrefix(t *testing.T) {
	chat := &fakeChat{}
	trs, _, err := Run(context.Background(), newScripted(t, 4), chat, factory(10, 1000, 0),
		[]Request{{Task: task(2), Group: 5, Samples: 1}}, opts())
	if err != nil {
		t.Fatal(err)
	}
	src := trs[0]
	cut := src.TurnStart(1)
	if cut < 0 {
		t.Fatalf("episode %v has no turn 1", src.Tokens)
	}
	dec := newScripted(t, 4)
	cont, _, err := Run(context.Background(), dec, chat, factory(10, 1000, 0),
		[]Request{{Task: task(2), Group: 5, Samples: 2, Prefix: &Prefix{Episode: src, Turns: 1, FirstSample: 4}}}, opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(cont) != 2 || dec.prefills != 1 || dec.copies != 1 {
		t.Fatalf("%d continuations, %d prefix prefills, %d copies; want 2, 1, 1", len(cont), dec.prefills, dec.copies)
	}
	wantT, wantM := expected(2)
	for i := range wantM[:cut] {
		wantM[i] = 0
	}
	for i, c := range byIDs(cont, "3-train-5-4", "3-train-5-5") {
		if c == nil {
			t.Fatalf("continuation %d missing: %v", i, cont)
		}
		if fmt.Sprint(c.Tokens) != fmt.Sprint(wantT) || fmt.Sprint(c.Mask) != fmt.Sprint(wantM) || c.PromptLen != src.PromptLen {
			t.Fatalf("continuation %s: tokens %v mask %v prompt %d\nwant %v %v %d", c.ID, c.Tokens, c.Mask, c.PromptLen, wantT, wantM, src.PromptLen)
		}
		for j, lp := range c.Logprobs {
			if (c.Mask[j] == 0) != (lp == 0) {
				t.Fatalf("continuation %s token %d: logprob %v, mask %d (prefix %d tokens)", c.ID, j, lp, c.Mask[j], cut)
			}
		}
		if c.ContinuedFrom != src.ID || c.Group != 5 || c.Sample != 4+i || c.Stop != trajectory.StopAnswer {
			t.Fatalf("continuation %+v", c)
		}
		// outcome 2 plus 0.5 for each of the two tool turns (the replayed one
		// included), one passage each
		if len(c.Turns) != 3 || c.Turns[0].Evidence != 1 || c.Turns[0].Text != src.Turns[0].Text ||
			c.Reward != 3 || c.Evidence != 2 {
			t.Fatalf("continuation %s: reward %v evidence %d turns %+v", c.ID, c.Reward, c.Evidence, c.Turns)
		}
	}
}

// A replay answered otherwise than the episode was ends the continuations
// with an error saying so, and nothing is decoded.
func TestContinuationRefusesDifferentReplay(t *testing.T) {
	chat := &fakeChat{}
	trs, _, err := Run(context.Background(), newScripted(t, 4), chat, factory(10, 1000, 0),
		[]Request{{Task: task(2), Group: 0, Samples: 1}}, opts())
	if err != nil {
		t.Fatal(err)
	}
	other := func(task envs.Task) (Setup, error) {
		st, err := factory(10, 1000, 0)(task)
		st.Env = moreResponses{st.Env}
		return st, err
	}
	dec := newScripted(t, 4)
	cont, st, err := Run(context.Background(), dec, chat, other,
		[]Request{{Task: task(2), Group: 0, Samples: 2, Prefix: &Prefix{Episode: trs[0], Turns: 2, FirstSample: 1}}}, opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(cont) != 2 || st.Generated != 0 || dec.prefills != 0 {
		t.Fatalf("%d trajectories, %d tokens generated, %d prefills; want 2 failed, none", len(cont), st.Generated, dec.prefills)
	}
	for _, c := range cont {
		if c.Stop != trajectory.StopError || !strings.Contains(c.Error, "replay turn 0: the environment answered otherwise") ||
			c.ContinuedFrom != trs[0].ID {
			t.Fatalf("continuation %s: stop %s error %q from %q", c.ID, c.Stop, c.Error, c.ContinuedFrom)
		}
	}
}

// moreResponses answers every tool turn with one response more than its
// environment does.
type moreResponses struct{ Env }

func (m moreResponses) Step(ctx context.Context, a envs.Action) (envs.StepResult, error) {
	r, err := m.Env.Step(ctx, a)
	if !r.Done {
		r.Responses = append(r.Responses, "extra")
	}
	return r, err
}

func byIDs(trs []*trajectory.Trajectory, ids ...string) []*trajectory.Trajectory {
	m := byID(trs)
	out := make([]*trajectory.Trajectory, len(ids))
	for i, id := range ids {
		out[i] = m[id]
	}
	return out
}
