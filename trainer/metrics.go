package trainer

import (
	"fmt"
	"math"

	"github.com/agentrl/agentrl/internal/stat"

	"github.com/agentrl/agentrl/trainer/algo"
	"github.com/agentrl/agentrl/trainer/ppo"
	"github.com/agentrl/agentrl/trainer/rollout"
	"github.com/agentrl/agentrl/trainer/traj"
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

// episodeMetrics summarises trajectories under a prefix: reward (mean, std,
// per component), EM/F1 (overall and per hop count), response length,
// turns, tool calls, tool success, truncation and error rates.
func episodeMetrics(prefix string, trs []*traj.Trajectory) map[string]float64 {
	m := map[string]float64{}
	var reward, resp, turns, calls, okCalls, trunc, errs acc
	comps := map[string]*acc{}
	hops := map[int]*acc{}
	for _, t := range trs {
		reward.add(t.Reward)
		resp.add(float64(t.ActionTokens()))
		turns.add(float64(len(t.Turns)))
		n, ok := 0, 0
		for _, tu := range t.Turns {
			if tu.ToolName != "" || tu.ParseError != "" {
				n++
				if tu.ToolOK {
					ok++
				}
			}
		}
		calls.add(float64(n))
		if n > 0 {
			okCalls.add(float64(ok) / float64(n))
		}
		trunc.add(b2f(t.Stop.Truncated()))
		errs.add(b2f(t.Stop == traj.StopError))
		for k, v := range t.Components {
			if comps[k] == nil {
				comps[k] = &acc{}
			}
			comps[k].add(v)
		}
		if hops[t.Hops] == nil {
			hops[t.Hops] = &acc{}
		}
		hops[t.Hops].add(t.Components["em"])
	}
	m[prefix+"reward_mean"] = reward.mean()
	m[prefix+"reward_std"] = reward.std()
	for k, a := range comps {
		m[prefix+k] = a.mean()
	}
	if _, ok := m[prefix+"em"]; !ok {
		m[prefix+"em"] = 0
	}
	for h, a := range hops {
		if h > 0 {
			m[fmt.Sprintf("%sem_hop%d", prefix, h)] = a.mean()
		}
	}
	m[prefix+"response_len_mean"] = resp.mean()
	m[prefix+"turns_mean"] = turns.mean()
	m[prefix+"tool_calls_mean"] = calls.mean()
	m[prefix+"tool_success"] = okCalls.mean()
	m[prefix+"truncation_rate"] = trunc.mean()
	m[prefix+"error_rate"] = errs.mean()
	m[prefix+"n"] = float64(len(trs))
	return m
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// updateMetrics adds the update's diagnostics and the advantage statistics.
func updateMetrics(m map[string]float64, batch []*traj.Trajectory, u ppo.Stats, critic bool) {
	m["policy_loss"] = u.PolicyLoss
	m["kl_loss"] = u.KLLoss
	m["entropy"] = u.Entropy
	m["clip_frac_low"] = u.ClipFracLow
	m["clip_frac_high"] = u.ClipFracHigh
	m["approx_kl"] = u.ApproxKL
	m["grad_norm"] = u.GradNorm
	m["optimizer_steps"] = float64(u.Steps)
	m["skipped_updates"] = float64(u.Skipped)
	a := algo.AdvantageStats(batch)
	m["adv_mean"], m["adv_std"], m["adv_min"], m["adv_max"] = a.Mean, a.Std, a.Min, a.Max
	r := algo.ReturnStats(batch)
	m["return_mean"] = r.Mean
	if critic {
		m["value_loss"] = u.ValueLoss
		m["critic_grad_norm"] = u.CriticGradNorm
		m["explained_variance"] = algo.ExplainedVariance(batch)
	}
}

// rolloutMetrics adds the scheduler's throughput and time split.
func rolloutMetrics(m map[string]float64, s rollout.Stats) {
	m["tokens_per_s_rollout"] = s.TokensPerS()
	m["time_rollout_s"] = s.Wall.Seconds()
	m["time_decode_s"] = s.Decode.Seconds()
	m["time_prefill_s"] = s.Prefill.Seconds()
	m["time_tool_wait_s"] = s.Idle.Seconds()
	m["decode_batch_mean"] = s.MeanBatch
}
