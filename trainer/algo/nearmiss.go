package algo

import "github.com/agentrl/agentrl/trajectory"

// NearMiss is an episode worth continuing (algorithm.near_miss): it
// retrieved supporting passages and still answered wrong. Turns is how many
// of its turns a continuation keeps: up to and including the last one that
// retrieved a new supporting passage.
type NearMiss struct {
	Episode *trajectory.Trajectory
	Turns   int
}

// NearMisses picks, in each group of batch (groups in order of first
// appearance), the wrong-answered episode that retrieved the most
// supporting passages, at least one (ties to the lower sample): the
// evidence-guided exploration of David-GRPO (arXiv:2601.21699), which
// samples more continuations from the state where a near miss had its
// evidence. An episode that failed or was cancelled, one already a
// continuation, or one that ended with its last evidence turn (nothing
// after it to redo) is not picked.
func NearMisses(batch []*trajectory.Trajectory) []NearMiss {
	var out []NearMiss
	for _, g := range groupsOf(batch) {
		var best NearMiss
		for _, k := range g {
			t := batch[k]
			turns := evidenceTurns(t)
			if turns == 0 || t.Correct || t.ContinuedFrom != "" ||
				t.Stop == trajectory.StopError || t.Stop == trajectory.StopCancelled {
				continue
			}
			if best.Episode == nil || t.Evidence > best.Episode.Evidence ||
				(t.Evidence == best.Episode.Evidence && t.Sample < best.Episode.Sample) {
				best = NearMiss{Episode: t, Turns: turns}
			}
		}
		if best.Episode != nil {
			out = append(out, best)
		}
	}
	return out
}

// evidenceTurns is the number of turns up to and including t's last one
// that retrieved a new supporting passage, 0 when none did or when t's
// tokens hold nothing after that turn's observation.
func evidenceTurns(t *trajectory.Trajectory) int {
	last := -1
	for j, u := range t.Turns {
		if u.Evidence > 0 {
			last = j
		}
	}
	if last < 0 || t.Evidence <= 0 {
		return 0
	}
	if t.TurnStart(last+1) < 0 {
		return 0
	}
	return last + 1
}
