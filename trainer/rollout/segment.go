package rollout

import (
	"fmt"
	"slices"

	"github.com/agentrl/agentrl/trajectory"
)

// extends reports whether context begins with the sequence so far, token
// for token.
func extends(context, sofar []int32) bool {
	return len(context) >= len(sofar) && slices.Equal(context[:len(sofar)], sofar)
}

// newSegment is the next segment of ep, whose prompt is context, a
// rendered context that does not extend the current segment: trajectory
// "<id>.<k>" (k = 1, 2, ...) of the same group and sample, all of context
// mask 0 and turn -1. The episode enters it once context is in place
// (episode.enter).
func newSegment(ep *episode, context []int32) *trajectory.Trajectory {
	first := ep.segs[0]
	seg := &trajectory.Trajectory{
		ID: fmt.Sprintf("%s.%d", first.ID, len(ep.segs)), TaskID: first.TaskID, Dataset: first.Dataset, Hops: first.Hops, Support: first.Support,
		Group: first.Group, Sample: first.Sample, Split: first.Split, Iteration: first.Iteration,
		PolicyVersion: first.PolicyVersion, Question: first.Question, Gold: first.Gold,
		PromptLen: len(context),
		Tokens:    append([]int32(nil), context...),
		Logprobs:  make([]float32, len(context)),
		Mask:      make([]uint8, len(context)),
		TurnOf:    make([]int16, len(context)),
	}
	for i := range seg.TurnOf {
		seg.TurnOf[i] = -1
	}
	return seg
}
