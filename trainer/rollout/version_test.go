package rollout

import (
	"context"
	"testing"

	"github.com/agentrl/agentrl/decoding"
)

// swappingDecoder is the scripted policy whose weights are swapped to the
// next version after every swapEvery decode steps, as the asynchronous
// loop's rollout role receives each update's weights between two steps.
type swappingDecoder struct {
	*scriptedDecoder
	steps, swapEvery, version int
	used                      int // version of the last step's weights
}

func (d *swappingDecoder) Step(slots []int, s decoding.Sampling, toks []int64, lps []float32) error {
	if d.steps > 0 && d.steps%d.swapEvery == 0 {
		d.version++
	}
	d.steps++
	d.used = d.version
	return d.scriptedDecoder.Step(slots, s, toks, lps)
}

// A partial rollout across weight swaps: task 2 decodes 4 + 4 + 2 tokens
// in three turns, one step each; with a new version after every 3 steps,
// its turns begin at steps 1, 5 and 9, sampled by versions 0, 1 and 2
// (hand-worked: steps 1-3 are version 0, 4-6 version 1, 7-9 version 2).
// Each turn records its first token's version, the trajectory its first
// turn's, and every token keeps the logprob it was sampled with (the
// script's -0.01 x id, whatever the version): what rollout correction
// reads per token.
func TestTurnsKeepTheirVersionsAcrossSwaps(t *testing.T) {
	d := &swappingDecoder{scriptedDecoder: newScripted(t, 1), swapEvery: 3}
	opt := Options{MaxTurnTokens: 10, MaxTotalTokens: 100, PolicyVersion: 7, Deterministic: true,
		Version: func() int { return d.used }}
	trs, _, err := Run(context.Background(), d, &fakeChat{}, factory(5, 100, 0), []Request{{Task: task(2), Samples: 1}}, opt)
	if err != nil {
		t.Fatal(err)
	}
	tr := trs[0]
	if len(tr.Turns) != 3 {
		t.Fatalf("%d turns, want 3", len(tr.Turns))
	}
	for i, want := range []int{0, 1, 2} {
		if got := tr.Turns[i].PolicyVersion; got != want {
			t.Errorf("turn %d sampled by version %d, want %d", i, got, want)
		}
	}
	if tr.PolicyVersion != 0 {
		t.Errorf("trajectory version %d, want its first turn's 0", tr.PolicyVersion)
	}
	toks, _ := expected(2)
	for i, v := range toks {
		want := float32(0)
		if tr.Mask[i] == 1 {
			want = -0.01 * float32(v)
		}
		if tr.Logprobs[i] != want {
			t.Errorf("token %d (%d): behaviour logprob %v, want %v", i, v, tr.Logprobs[i], want)
		}
	}
	// Without Version every turn has Options.PolicyVersion.
	trs, _, err = Run(context.Background(), newScripted(t, 1), &fakeChat{}, factory(5, 100, 0), []Request{{Task: task(2), Samples: 1}},
		Options{MaxTurnTokens: 10, MaxTotalTokens: 100, PolicyVersion: 7, Deterministic: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, tu := range trs[0].Turns {
		if tu.PolicyVersion != 7 || trs[0].PolicyVersion != 7 {
			t.Errorf("synchronous: turn %d version %d, trajectory %d, want 7", i, tu.PolicyVersion, trs[0].PolicyVersion)
		}
	}
}
