package algo

import (
	"fmt"
	"math"

	"github.com/agentrl/agentrl/trajectory"
)

// checkBatch validates what the estimators read: per-token arrays of equal
// length, turn indices within t.Turns, action tokens inside a turn, finite
// rewards, values (when needValues) and KL penalties. It names the
// trajectory at fault.
func checkBatch(batch []*trajectory.Trajectory, kl [][]float32, needValues bool) error {
	if kl != nil && len(kl) != len(batch) {
		return fmt.Errorf("kl penalty: %d slices for %d trajectories", len(kl), len(batch))
	}
	for i, t := range batch {
		if t == nil {
			return fmt.Errorf("batch[%d]: nil trajectory", i)
		}
		if err := checkTrajectory(t, klOf(kl, i), needValues); err != nil {
			return fmt.Errorf("trajectory %q (batch[%d]): %w", t.ID, i, err)
		}
	}
	return nil
}

func checkTrajectory(t *trajectory.Trajectory, kl []float32, needValues bool) error {
	n := len(t.Tokens)
	if len(t.Mask) != n || len(t.TurnOf) != n {
		return fmt.Errorf("%d tokens but %d mask bits and %d turn indices", n, len(t.Mask), len(t.TurnOf))
	}
	if t.PromptLen < 0 || t.PromptLen > n {
		return fmt.Errorf("prompt length %d outside [0, %d]", t.PromptLen, n)
	}
	for i := range n {
		if int(t.TurnOf[i]) >= len(t.Turns) {
			return fmt.Errorf("token %d: turn %d of %d turns", i, t.TurnOf[i], len(t.Turns))
		}
		if t.Mask[i] != 0 && (t.TurnOf[i] < 0 || i < t.PromptLen) {
			return fmt.Errorf("token %d: action token outside any turn", i)
		}
	}
	if !finite(t.Outcome) {
		return fmt.Errorf("outcome reward %v", t.Outcome)
	}
	for j, turn := range t.Turns {
		if !finite(turn.ProcessReward) {
			return fmt.Errorf("turn %d: process reward %v", j, turn.ProcessReward)
		}
	}
	if needValues {
		if len(t.Values) != n {
			return fmt.Errorf("%d tokens but %d values", n, len(t.Values))
		}
		for i, v := range t.Values {
			if !finite(float64(v)) {
				return fmt.Errorf("token %d: value %v", i, v)
			}
		}
	}
	if kl != nil {
		if len(kl) != n {
			return fmt.Errorf("%d tokens but %d kl penalties", n, len(kl))
		}
		for i, k := range kl {
			if t.Mask[i] != 0 && !finite(float64(k)) {
				return fmt.Errorf("token %d: kl %v", i, k)
			}
		}
	}
	return nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// klOf returns the KL slice of batch[i], nil when there is none.
func klOf(kl [][]float32, i int) []float32 {
	if kl == nil {
		return nil
	}
	return kl[i]
}

// steps returns, in order, the indices of the tokens that receive an
// advantage: the action tokens (Mask == 1) with the advantage mask on,
// every token after the prompt with it off (see Options.AdvantageMask).
func steps(t *trajectory.Trajectory, opt Options) []int {
	var idx []int
	for i := t.PromptLen; i < len(t.Tokens); i++ {
		if !opt.AdvantageMask || t.Mask[i] == 1 {
			idx = append(idx, i)
		}
	}
	return idx
}

// tokenRewards returns the token-level reward r_t of every token of t:
//
//	r_t = sum of the process rewards landing at t
//	    + Outcome if t is the last action token
//	    - beta*kl_t if t is an action token (KL-in-reward, verl compute_rewards)
//
// Turn i's process reward lands at the last action token of turn i. A turn
// with no action token passes its reward to the last action token before
// it, or, when the policy has not acted yet, to the first action token of
// the trajectory. A trajectory without action tokens has nowhere to put a
// reward: every r_t is 0.
func tokenRewards(t *trajectory.Trajectory, kl []float32, beta float64) []float64 {
	r := make([]float64, len(t.Tokens))
	first, last := -1, -1
	lastOfTurn := make([]int, len(t.Turns))
	for j := range lastOfTurn {
		lastOfTurn[j] = -1
	}
	for i, m := range t.Mask {
		if m == 0 {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
		lastOfTurn[t.TurnOf[i]] = i
		if kl != nil {
			r[i] -= beta * float64(kl[i])
		}
	}
	if last < 0 {
		return r
	}
	land := first
	for j, turn := range t.Turns {
		if lastOfTurn[j] >= 0 {
			land = lastOfTurn[j]
		}
		r[land] += turn.ProcessReward
	}
	r[last] += t.Outcome
	return r
}

// score is the scalar sequence reward of the outcome estimators, verl's
// token_level_rewards.sum(-1): Outcome + sum of the process rewards -
// beta * sum of kl over action tokens. It equals the sum of tokenRewards
// whenever t has an action token, and still counts in its group when t has
// none.
func score(t *trajectory.Trajectory, kl []float32, beta float64) float64 {
	s := t.Outcome
	for _, turn := range t.Turns {
		s += turn.ProcessReward
	}
	if kl != nil {
		for i, m := range t.Mask {
			if m != 0 {
				s -= beta * float64(kl[i])
			}
		}
	}
	return s
}

// resetOutputs gives t zeroed Advantages and Returns of len(t.Tokens).
func resetOutputs(t *trajectory.Trajectory) {
	t.Advantages = make([]float32, len(t.Tokens))
	t.Returns = make([]float32, len(t.Tokens))
}
