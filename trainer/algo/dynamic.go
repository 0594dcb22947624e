package algo

import (
	"github.com/agentrl/agentrl/trajectory"
)

// Draw samples the groups of one draw of prompts; d counts the draws from
// 0. The trajectories of a group share Iteration and Group, and groups of
// different draws differ.
type Draw func(d int) ([]*trajectory.Trajectory, error)

// Drawn is what DynamicSample drew: every episode, in the order drawn,
// each marked with why it was left out (Dropped) or not; the number of
// draws; and the groups dropped for zero variance.
type Drawn struct {
	Episodes     []*trajectory.Trajectory
	Draws        int
	ZeroVariance int // groups whose rewards all agreed
	Informative  int // groups kept for the update
	// Stopped is true when the more hook ended the drawing before want
	// informative groups or maxDraws draws.
	Stopped bool
}

// DynamicSample is DAPO's dynamic sampling (arXiv:2503.14476, section 3.2;
// verl's filter_groups with max_num_gen_batches): it draws (draw) until
// want informative groups are in hand or maxDraws draws were made. A group
// is informative when its scalar rewards (Outcome + process rewards) do
// not all agree, or when it has one sample (as verl keeps it); the others
// are marked DroppedZeroVariance. Informative groups past the first want
// are marked DroppedSurplus (DAPO trims the batch to its size). At the cap
// the update gets the informative groups there are, maybe fewer than want.
// Before each draw after the first, more (when not nil) is shown what is
// drawn so far and may end the drawing (returning false): a stop asked
// meanwhile, say; the update then gets what there is, as at the cap.
func DynamicSample(want, maxDraws int, draw Draw, more func(Drawn) (bool, error)) (Drawn, error) {
	var out Drawn
	for out.Draws < maxDraws && out.Informative < want {
		if out.Draws > 0 && more != nil {
			goOn, err := more(out)
			if err != nil {
				return out, err
			}
			if !goOn {
				out.Stopped = true
				break
			}
		}
		trs, err := draw(out.Draws)
		if err != nil {
			return out, err
		}
		out.Draws++
		for _, g := range groupsOf(trs) {
			members := make([]*trajectory.Trajectory, len(g))
			for i, k := range g {
				members[i] = trs[k]
			}
			switch {
			case !varies(members):
				out.ZeroVariance++
				mark(members, trajectory.DroppedZeroVariance)
			case out.Informative >= want:
				mark(members, trajectory.DroppedSurplus)
			default:
				out.Informative++
			}
		}
		out.Episodes = append(out.Episodes, trs...)
	}
	return out, nil
}

// varies reports whether a group's rewards do not all agree; a group of
// one sample counts as varying.
func varies(g []*trajectory.Trajectory) bool {
	if len(g) < 2 {
		return true
	}
	s := scores(g, nil, 0)
	for _, x := range s[1:] {
		if x != s[0] {
			return true
		}
	}
	return false
}

func mark(g []*trajectory.Trajectory, why string) {
	for _, t := range g {
		t.Dropped = why
	}
}
