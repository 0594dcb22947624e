package envs

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/agentrl/agentrl/envs/reward"
	"github.com/agentrl/agentrl/toolcall"
	"github.com/agentrl/agentrl/trajectory"
)

// Components of the external reward.
const (
	ComponentExternal       = "external"        // the Scorer's reward
	ComponentExternalPrefix = "external."       // before each of its components' names
	ComponentExternalFailed = "external_failed" // 1 when the Scorer failed (its reward counts as 0)
)

// Outcome scores the episode against the task's gold answers: the
// components "em", "f1" and "substring_em" (best over the answer aliases;
// 0 unless the episode ended with an answer), "format" (the all-or-nothing
// protocol check over every turn) and "total", which is also the returned
// reward: Rewards.Outcome * components[Rewards.Scorer] + Rewards.Format *
// format. With an external Scorer (EnvConfig.External), its reward is
// added with its weight and stored as "external", its components as
// "external.<name>"; a Scorer that fails or times out, or whose weighted
// reward is not finite (a huge reward times the weight) or makes the total
// so, adds 0 and sets "external_failed" to 1. Process rewards are not
// included; they were paid per turn. Meant for a finished episode; before
// that it scores the episode as it stands.
func (e *ToolEnv) Outcome() (float64, map[string]float64) {
	e.mu.Lock()
	turns := make([]reward.FormatTurn, len(e.turns))
	for i, t := range e.turns {
		calls, err := toolcall.Parse(e.cfg.Calls, t.Text, e.schemas)
		turns[i] = reward.FormatTurn{Text: t.Text, CallsOK: err == nil && len(calls) > 0}
	}
	answered, answer := e.stop == trajectory.StopAnswer, e.answer
	var ep ScoredEpisode
	if e.cfg.External.Scorer != nil {
		ep = e.episode()
	}
	e.mu.Unlock()

	c := map[string]float64{reward.NameEM: 0, reward.NameF1: 0, reward.NameSubstringEM: 0}
	if answered {
		c[reward.NameEM] = reward.Best(reward.ExactMatch, answer, e.task.Answers)
		c[reward.NameF1] = reward.Best(reward.F1, answer, e.task.Answers)
		c[reward.NameSubstringEM] = reward.Best(reward.SubstringMatch, answer, e.task.Answers)
	}
	c[reward.NameFormat] = reward.Format(e.cfg.Calls, turns)
	w := e.cfg.Rewards
	c[reward.NameTotal] = w.Outcome*c[w.Scorer] + w.Format*c[reward.NameFormat]
	if x := e.cfg.External; x.Scorer != nil {
		c[reward.NameTotal] += e.external(ep, c)
	}
	return c[reward.NameTotal], c
}

// external runs the external Scorer, records its components in c and
// returns its weighted reward, to be added to c's total.
func (e *ToolEnv) external(ep ScoredEpisode, c map[string]float64) float64 {
	x := e.cfg.External
	timeout := e.cfg.Rewards.External.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r, comps, err := x.Scorer.Score(ctx, ep)
	weight := e.cfg.Rewards.External.Weight
	if weighted := weight * r; err == nil && (!finite(weighted) || !finite(c[reward.NameTotal]+weighted)) {
		err = fmt.Errorf("%v: reward %v weighted by %v is %v, which makes the total %v", x.Scorer, r, weight, weighted, c[reward.NameTotal]+weighted)
	}
	if err != nil {
		if x.OnError != nil {
			x.OnError(fmt.Errorf("task %s: external reward: %w", ep.TaskID, err))
		}
		c[ComponentExternal], c[ComponentExternalFailed] = 0, 1
		return 0
	}
	c[ComponentExternal] = r
	for k, v := range comps {
		c[ComponentExternalPrefix+k] = v
	}
	return weight * r
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
