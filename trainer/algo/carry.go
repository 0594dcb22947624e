package algo

import "github.com/agentrl/agentrl/trajectory"

// carryAcross gives every token after the prompt that is not a step (idx,
// in order) the advantage of the first step after it, and returns those
// tokens' indices. With the advantage mask on these are the tool-response
// and template tokens between turns: verl's GAE over a multi-turn response
// keeps lastgaelam unchanged across mask-0 tokens, so they hold the
// advantage of the action that follows them. The estimators set their
// returns. Tokens after the last step (none in a well-formed trajectory)
// get nothing. With the advantage mask off every token after the prompt
// is a step and nothing is carried.
func carryAcross(t *trajectory.Trajectory, idx []int) []int {
	filled := carried(t, idx)
	next := len(idx) - 1
	for j := len(filled) - 1; j >= 0; j-- {
		i := filled[j]
		for next > 0 && idx[next-1] > i {
			next--
		}
		t.Advantages[i] = t.Advantages[idx[next]]
	}
	return filled
}

// carried lists the tokens after the prompt that are not steps (idx, in
// order) but have a step after them: the tokens carryAcross fills.
func carried(t *trajectory.Trajectory, idx []int) []int {
	if len(idx) == 0 {
		return nil
	}
	var out []int
	k := 0
	for i := t.PromptLen; i < idx[len(idx)-1]; i++ {
		for k < len(idx) && idx[k] < i {
			k++
		}
		if idx[k] != i {
			out = append(out, i)
		}
	}
	return out
}
