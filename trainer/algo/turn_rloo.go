package algo

import "github.com/agentrl/agentrl/trajectory"

// TurnRLOO gives each turn its own advantage from process rewards,
// registered as "turn_rloo": the turn's discounted return minus a
// leave-one-out baseline taken at the same turn index from the other
// samples of its group,
//
//	R_{i,k} = r_{i,k} + TurnGamma * R_{i,k+1}        (this turn's reward and the later ones')
//	b_{i,k} = mean of R_{j,k} over the samples j != i of the group that have a k-th turn
//	          (0 when none has)
//	A_{i,k} = R_{i,k} - b_{i,k}
//
// where a step is a turn in which the policy acted and r_{i,k} is its
// reward (its process reward, the outcome at the last step, minus the KL
// penalty of its tokens). Each credited token (see Options.AdvantageMask)
// gets the advantage of its turn; returns equal the advantages. An episode
// split into segments (see episodes) is one sample: its steps are its
// segments' in order, k counting across them, and each segment's turns get
// their steps' advantages.
//
// It is unbiased when episodes differ in length, because each turn's
// gradient term grad log pi(a_k | s_k) * A_{i,k} subtracts exactly one
// baseline, and that baseline is computed from the other samples only, so
// it cannot depend on a_k or on anything the episode does afterwards (how
// many turns it still takes included): E[grad log pi(a_k|s_k) b] = 0. The
// construction this avoids normalises each turn's reward by the mean and
// std of its turn index across the group and sums the normalised rewards
// of the later turns (MT-GRPO style): the number of baseline terms then
// grows with the episode's own length, an action-dependent baseline that
// adds a hidden bonus or penalty to every "take another turn" decision
// (verl's RFC #7244 derives it). For the same reason there is no division
// by a per-turn-index std: the spread of returns at turn k depends on
// which episodes were still running. The rewards are not whitened either:
// RLOO's scale is the reward's.
func TurnRLOO(batch []*trajectory.Trajectory, kl [][]float32, opt Options) error {
	if err := checkBatch(batch, kl, false); err != nil {
		return err
	}
	for _, g := range groupsOf(batch) {
		reps, rep := episodes(batch, g)
		steps, at := episodeSteps(batch, kl, opt.KLCoef, g, reps, rep)
		rets := make([][]float64, len(reps))
		for p := range reps {
			rets[p] = turnReturns(steps[p], opt.TurnGamma)
		}
		adv := make(map[int]map[int]float64, len(g)) // batch position -> turn -> advantage
		for _, k := range g {
			adv[k] = map[int]float64{}
		}
		for p := range reps {
			for j, r := range rets[p] {
				sum, n := 0.0, 0
				for q := range reps {
					if q != p && j < len(rets[q]) {
						sum += rets[q][j]
						n++
					}
				}
				b := 0.0
				if n > 0 {
					b = sum / float64(n)
				}
				adv[at[p][j]][steps[p][j].turn] = r - b
			}
		}
		for _, k := range g {
			assignTurns(batch[k], opt, adv[k])
		}
	}
	return nil
}

func init() { Register("turn_rloo", Estimator{Advantages: TurnRLOO, Groups: true}) }
