package metric

import (
	"math"

	"github.com/agentrl/agentrl/internal/stat"
	"github.com/agentrl/agentrl/trajectory"
)

// acc collects values for a metric's mean and population std (ddof 0).
type acc struct{ xs []float64 }

func (a *acc) add(x float64) { a.xs = append(a.xs, x) }

// mean is NaN without values.
func (a acc) mean() float64 {
	m, _ := stat.MeanStd(a.xs, 0)
	return m
}

// std is the population std, NaN without values.
func (a acc) std() float64 {
	if len(a.xs) == 0 {
		return math.NaN()
	}
	_, s := stat.MeanStd(a.xs, 0)
	return s
}

// Episodes is what a batch of episodes measures, named under a prefix:
// reward (mean, std, per component), EM/F1 (overall and per hop count),
// evidence recall (overall and per hop count, over the tasks that name
// their supporting passages), response length, turns, tool calls, tool
// success, truncation and error rates.
func Episodes(prefix string, trs []*trajectory.Trajectory) map[string]float64 {
	m := map[string]float64{}
	var reward, resp, turns, calls, okCalls, trunc, errs acc
	comps := map[string]*acc{}
	hops, evidence := map[int]*acc{}, map[int]*acc{}
	var recall acc
	extended, split := 0, 0 // gateway requests that extended an agent program's ledger, and that did not
	type key struct{ group, sample int }
	seen := map[key]bool{}
	for _, t := range trs {
		// An agent program's episode may be several trajectories (ledger
		// segments) of one group and sample: it counts once.
		if k := (key{t.Group, t.Sample}); seen[k] {
			continue
		} else {
			seen[k] = true
		}
		for _, r := range t.Requests {
			switch r.Link {
			case "extend":
				extended++
			case "split":
				split++
			}
		}
		reward.add(t.Reward)
		resp.add(float64(t.ActionTokens()))
		turns.add(float64(len(t.Turns)))
		n, ok := 0, 0 // turns with tool calls, and those whose calls all succeeded
		for _, tu := range t.Turns {
			if len(tu.Calls) > 0 {
				n++
				if tu.ToolsOK() {
					ok++
				}
			}
		}
		calls.add(float64(n))
		if n > 0 {
			okCalls.add(float64(ok) / float64(n))
		}
		trunc.add(b2f(t.Stop.Truncated()))
		errs.add(b2f(t.Stop.Failed()))
		for k, v := range t.Components {
			if comps[k] == nil {
				comps[k] = &acc{}
			}
			comps[k].add(v)
		}
		if hops[t.Hops] == nil {
			hops[t.Hops] = &acc{}
		}
		hops[t.Hops].add(t.Components[EM])
		if r, ok := t.EvidenceRecall(); ok {
			recall.add(r)
			if evidence[t.Hops] == nil {
				evidence[t.Hops] = &acc{}
			}
			evidence[t.Hops].add(r)
		}
	}
	m[prefix+RewardMean] = reward.mean()
	m[prefix+RewardStd] = reward.std()
	for k, a := range comps {
		m[prefix+k] = a.mean()
	}
	if _, ok := m[prefix+EM]; !ok {
		m[prefix+EM] = 0
	}
	for h, a := range hops {
		if h > 0 {
			m[prefix+EMHop(h)] = a.mean()
		}
	}
	if len(recall.xs) > 0 {
		m[prefix+EvidenceRecall] = recall.mean()
		for h, a := range evidence {
			if h > 0 {
				m[prefix+EvidenceHop(h)] = a.mean()
			}
		}
	}
	m[prefix+ResponseLenMean] = resp.mean()
	m[prefix+TurnsMean] = turns.mean()
	m[prefix+ToolCallsMean] = calls.mean()
	m[prefix+ToolSuccess] = okCalls.mean()
	m[prefix+TruncationRate] = trunc.mean()
	m[prefix+ErrorRate] = errs.mean()
	m[prefix+N] = float64(len(seen))
	if extended+split > 0 {
		m[prefix+PrefixMatchRate] = float64(extended) / float64(extended+split)
	}
	return m
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
