package algo

import (
	"encoding/binary"
	"fmt"

	"github.com/agentrl/agentrl/trajectory"
)

// GiGPO is Group-in-Group Policy Optimization (Feng et al. 2025, "Group-in-
// Group Policy Optimization for LLM Agent Training", arXiv:2505.10978;
// verl-agent: gigpo/core_gigpo.py compute_gigpo_outcome_advantage),
// registered as "gigpo". A step is a turn in which the policy acted. Two
// group-relative advantages are added:
//
//	episode level: A^E_i     = relative(R(tau_i))  among the group's trajectories
//	step level:    A^S_{i,k} = relative(R_{i,k})   among the steps of the group that
//	                                               share the anchor state of step k
//	               A_{i,k}   = A^E_i + omega * A^S_{i,k}
//
// where relative(x) = (x - mean) / (std + eps), or x - mean with
// NormByStd off (the paper's F_norm = 1), R(tau_i) is the trajectory's
// score (as GRPO's), and R_{i,k} = r_{i,k} + TurnGamma * R_{i,k+1} is the
// discounted return of step k, r_{i,k} the turn's reward (its process
// reward, the outcome at the last step, minus the KL penalty of its
// tokens). omega is StepWeight. A group of one (trajectories or
// steps) gives 0 at its level.
//
// The anchor state of a step is the whole token history before its first
// action token: the question, every earlier action and every tool
// response. Two steps share it exactly when their trajectories made the
// same calls and got the same responses so far. That is the state of the
// agent's MDP (the policy conditions on the whole history), so the steps
// of one anchor group faced the same decision and their returns differ
// only by what they did from there: A^S compares actions, not histories.
// The alternative, the same latest tool response whatever came before,
// groups more steps but mixes states that differ in what the agent
// already knows (one found the first hop, another did not), and then the
// comparison credits the history instead of the action. Every first turn
// shares the question, so the first steps of a group always form one
// anchor group.
//
// Each credited token (see Options.AdvantageMask) gets the advantage of
// its turn; returns equal the advantages, as for GRPO.
func GiGPO(batch []*trajectory.Trajectory, kl [][]float32, opt Options) error {
	if err := checkBatch(batch, kl, false); err != nil {
		return err
	}
	if err := unsegmented("gigpo", batch); err != nil {
		return err
	}
	s := scores(batch, kl, opt.KLCoef)
	for _, g := range groupsOf(batch) {
		episode, err := relative(s, g, opt)
		if err != nil {
			return fmt.Errorf("group %d (trajectory %q): %w", batch[g[0]].Group, batch[g[0]].ID, err)
		}
		// every step of the group, its return, and the groups of steps
		// that share an anchor state, in order of first appearance
		type stepRef struct{ k, turn int }
		var refs []stepRef
		var rets []float64
		anchors := map[string]int{}
		var byAnchor [][]int
		for _, k := range g {
			t := batch[k]
			st := turnSteps(t, klOf(kl, k), opt.KLCoef)
			for j, r := range turnReturns(st, opt.TurnGamma) {
				key := anchorKey(t.Tokens[:st[j].start])
				a, ok := anchors[key]
				if !ok {
					a = len(byAnchor)
					anchors[key] = a
					byAnchor = append(byAnchor, nil)
				}
				byAnchor[a] = append(byAnchor[a], len(refs))
				refs = append(refs, stepRef{k, st[j].turn})
				rets = append(rets, r)
			}
		}
		adv := make(map[int]map[int]float64, len(g)) // trajectory -> turn -> A
		for _, k := range g {
			adv[k] = map[int]float64{}
		}
		for _, members := range byAnchor {
			step, err := relative(rets, members, opt)
			if err != nil {
				ref := refs[members[0]]
				return fmt.Errorf("group %d, turn %d of trajectory %q and the steps sharing its state: %w", batch[ref.k].Group, ref.turn, batch[ref.k].ID, err)
			}
			for p, a := range step {
				ref := refs[p]
				adv[ref.k][ref.turn] = episode[ref.k] + opt.StepWeight*a
			}
		}
		for _, k := range g {
			assignTurns(batch[k], opt, adv[k])
		}
	}
	return nil
}

// anchorKey is a map key that equals another exactly when the token
// histories are equal.
func anchorKey(history []int32) string {
	b := make([]byte, 4*len(history))
	for i, v := range history {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	return string(b)
}

func init() { Register("gigpo", Estimator{Advantages: GiGPO, Groups: true}) }
