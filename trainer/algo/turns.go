package algo

import (
	"fmt"
	"math"

	"github.com/agentrl/agentrl/trajectory"
)

// turnStep is a turn in which the policy acted, a step of the turn-level
// estimators (gigpo, turn_rloo).
type turnStep struct {
	turn   int     // its index in t.Turns
	start  int     // the index of its first action token
	reward float64 // its reward: the token rewards of its action tokens, summed
}

// turnSteps lists, in order, the turns of t that hold an action token,
// with their rewards: the process reward of the turn (a turn without an
// action token hands its reward to the step before it, see tokenRewards),
// the outcome on the last step, minus the KL penalty of the turn's action
// tokens.
func turnSteps(t *trajectory.Trajectory, kl []float32, beta float64) []turnStep {
	r := tokenRewards(t, kl, beta)
	var out []turnStep
	for i, m := range t.Mask {
		if m == 0 {
			continue
		}
		turn := int(t.TurnOf[i])
		if len(out) == 0 || out[len(out)-1].turn != turn {
			out = append(out, turnStep{turn: turn, start: i})
		}
		out[len(out)-1].reward += r[i]
	}
	return out
}

// turnReturns are the discounted returns of the steps, the rewards of
// this step and the later ones: R_k = r_k + gamma * R_{k+1}, R_n = 0.
func turnReturns(steps []turnStep, gamma float64) []float64 {
	ret := make([]float64, len(steps))
	g := 0.0
	for k := len(steps) - 1; k >= 0; k-- {
		g = steps[k].reward + gamma*g
		ret[k] = g
	}
	return ret
}

// assignTurns gives each credited token of t (see Options.AdvantageMask)
// the advantage of its turn, adv[turn index in t.Turns] (0 for a turn
// without one), and the same value as its return. With the advantage mask
// off an observation token takes the advantage of the turn it answers
// (its TurnOf).
func assignTurns(t *trajectory.Trajectory, opt Options, adv map[int]float64) {
	resetOutputs(t)
	for _, i := range steps(t, opt) {
		a := float32(adv[int(t.TurnOf[i])])
		t.Advantages[i], t.Returns[i] = a, a
	}
}

// relative is the group-relative advantage of x[k] among the values x
// of the positions g: x - mean, divided by std + eps when opt.NormByStd
// (Bessel-corrected std); 0 for a group of one, which has no baseline.
// GRPO's episode level and GiGPO's two levels share it. A mean or std
// that overflows (rewards near 1e154 and beyond) is an error: an
// infinite std would turn every advantage of the group into 0.
func relative(x []float64, g []int, opt Options) (map[int]float64, error) {
	out := make(map[int]float64, len(g))
	mean, std := meanStd(x, g)
	if !finite(mean) || !finite(std) {
		largest := 0.0
		for _, k := range g {
			largest = max(largest, math.Abs(x[k]))
		}
		return nil, fmt.Errorf("rewards up to %g overflow the group's mean (%v) or standard deviation (%v): lower the rewards' scale", largest, mean, std)
	}
	for _, k := range g {
		a := 0.0
		if len(g) > 1 {
			a = x[k] - mean
			if opt.NormByStd {
				a /= std + opt.Eps
			}
		}
		out[k] = a
	}
	return out, nil
}
