package algo

import (
	"math"

	"github.com/agentrl/agentrl/trajectory"
)

// OverlongPenaltyComponent is the reward component under which
// PunishOverlong records each episode's penalty.
const OverlongPenaltyComponent = "overlong_penalty"

// Overlong is DAPO's overlong handling (arXiv:2503.14476, section 3.4):
// Filter masks episodes cut by the token budget out of the policy loss
// ("overlong filtering"); Buffer > 0 adds the soft overlong punishment, a
// penalty over the last Buffer tokens of the budget MaxLen, at most
// PenaltyFactor (verl's overlong_buffer len and penalty_factor).
type Overlong struct {
	Filter        bool
	Buffer        int // L, 0 = no penalty
	MaxLen        int // Lmax, the episode's token budget
	PenaltyFactor float64
}

// OverlongPenalty is DAPO's soft overlong punishment (its equation 13,
// scaled by factor as verl's penalty_factor) of an episode of n tokens:
// 0 up to Lmax - L tokens, then ((Lmax - L) - n) / L, falling linearly to
// -1 at Lmax, and -1 beyond; times factor.
func OverlongPenalty(n, maxLen, buffer int, factor float64) float64 {
	expected := maxLen - buffer
	if n <= expected {
		return 0
	}
	return factor * math.Max(-1, float64(expected-n)/float64(buffer))
}

// PunishOverlong adds the soft overlong penalty to each episode's outcome
// reward (and so to its Reward; its length is its whole token sequence,
// the one the budget bounds) and
// records it as the component overlong_penalty; it returns the penalties'
// mean over the batch. Without a buffer it does nothing and returns 0.
func (o Overlong) PunishOverlong(batch []*trajectory.Trajectory) float64 {
	if o.Buffer <= 0 || len(batch) == 0 {
		return 0
	}
	sum := 0.0
	for _, t := range batch {
		p := OverlongPenalty(len(t.Tokens), o.MaxLen, o.Buffer, o.PenaltyFactor)
		t.Outcome += p
		t.Reward += p
		if t.Components == nil {
			t.Components = map[string]float64{}
		}
		t.Components[OverlongPenaltyComponent] = p
		sum += p
	}
	return sum / float64(len(batch))
}

// FilterOverlong is DAPO's overlong filtering: with Filter on, the
// episodes the token budget cut (stop max_tokens) leave the batch the
// policy loss sees, after their group's advantages counted them; it
// returns the rest and how many were masked. Without Filter it returns
// batch as it is.
func (o Overlong) FilterOverlong(batch []*trajectory.Trajectory) (kept []*trajectory.Trajectory, masked int) {
	if !o.Filter {
		return batch, 0
	}
	kept = make([]*trajectory.Trajectory, 0, len(batch))
	for _, t := range batch {
		if t.Stop == trajectory.StopMaxTokens {
			masked++
			continue
		}
		kept = append(kept, t)
	}
	return kept, masked
}
