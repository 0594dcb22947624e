package algo

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/trajectory"
)

// EpisodeOf is the ID of the episode a trajectory is a segment of: its ID
// without a segment's ".<k>" suffix (segments "<id>", "<id>.1", ... of an
// episode whose context was rewritten; see trainer/rollout's env.context
// and the gateway's ledger). A trajectory with no ID is its own episode.
func EpisodeOf(t *trajectory.Trajectory) string {
	i := strings.LastIndexByte(t.ID, '.')
	if i < 0 || i == len(t.ID)-1 {
		return t.ID
	}
	for _, c := range t.ID[i+1:] {
		if c < '0' || c > '9' {
			return t.ID
		}
	}
	return t.ID[:i]
}

// episodes groups the positions g (one group) by episode: reps holds the
// position of each episode's first segment, in order, and rep maps every
// position of g to its episode's rep. A trajectory whose ID has no
// segment suffix is an episode of its own (two with one ID are two); a
// segment "<id>.<k>" joins the trajectory "<id>" of g, or the first
// segment of "<id>" when that is missing. The group statistics of the
// outcome estimators count each episode once, whatever its segments.
func episodes(batch []*trajectory.Trajectory, g []int) (reps []int, rep map[int]int) {
	rep = make(map[int]int, len(g))
	first := map[string]int{}
	for _, k := range g {
		if id := batch[k].ID; EpisodeOf(batch[k]) == id {
			if _, ok := first[id]; !ok {
				first[id] = k
			}
		}
	}
	for _, k := range g {
		id := EpisodeOf(batch[k])
		r, ok := first[id]
		if id == batch[k].ID || !ok {
			r = k
			if !ok {
				first[id] = k
			}
		}
		if r == k {
			reps = append(reps, k)
		}
		rep[k] = r
	}
	return reps, rep
}

// episodeScores is scores over episodes: every position gets the score of
// its episode, the outcome once plus every segment's process rewards and
// KL penalty, so that each segment of an episode carries the episode's
// credit.
func episodeScores(batch []*trajectory.Trajectory, kl [][]float32, beta float64) []float64 {
	s := scores(batch, kl, beta)
	for _, g := range groupsOf(batch) {
		reps, rep := episodes(batch, g)
		if len(reps) == len(g) {
			continue
		}
		total := map[int]float64{}
		for _, k := range g {
			total[rep[k]] += s[k]
			if rep[k] != k {
				total[rep[k]] -= batch[k].Outcome // the outcome is counted once
			}
		}
		for _, k := range g {
			s[k] = total[rep[k]]
		}
	}
	return s
}

// unsegmented refuses a batch in which an episode is split into segments:
// GiGPO groups turns by the state they start from within one trajectory
// and does not credit them across segments.
func unsegmented(name string, batch []*trajectory.Trajectory) error {
	for _, g := range groupsOf(batch) {
		if reps, _ := episodes(batch, g); len(reps) != len(g) {
			return fmt.Errorf("%s: episode %s is split into segments (env.context or an agent program that rewrote its history); "+
				"%s does not credit segments: use turn_rloo, grpo, rloo or reinforce_pp_baseline", name, EpisodeOf(batch[g[0]]), name)
		}
	}
	return nil
}

// segmentNumber is k of a segment "<id>.<k>", 0 for an episode's first.
func segmentNumber(t *trajectory.Trajectory) int {
	k, _ := strconv.Atoi(strings.TrimPrefix(t.ID[len(EpisodeOf(t)):], "."))
	return k
}

// episodeSteps lists the steps of each episode of group g (reps and rep
// from episodes): its segments' turnSteps in segment order, the outcome
// on the episode's last step only; at[p][j] is the batch position of the
// segment of episode p's step j.
func episodeSteps(batch []*trajectory.Trajectory, kl [][]float32, beta float64, g, reps []int, rep map[int]int) (steps [][]turnStep, at [][]int) {
	segs := map[int][]int{}
	for _, k := range g {
		segs[rep[k]] = append(segs[rep[k]], k)
	}
	steps, at = make([][]turnStep, len(reps)), make([][]int, len(reps))
	for p, r := range reps {
		ks := segs[r]
		sort.SliceStable(ks, func(a, b int) bool { return segmentNumber(batch[ks[a]]) < segmentNumber(batch[ks[b]]) })
		for _, k := range ks {
			st := turnSteps(batch[k], klOf(kl, k), beta)
			if len(st) == 0 {
				continue
			}
			if n := len(steps[p]); n > 0 {
				steps[p][n-1].reward -= batch[at[p][n-1]].Outcome // a later segment has the last step
			}
			for range st {
				at[p] = append(at[p], k)
			}
			steps[p] = append(steps[p], st...)
		}
	}
	return steps, at
}
