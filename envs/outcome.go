package envs

import "github.com/agentrl/agentrl/envs/reward"

// Outcome scores the episode against the task's gold answers: the
// components "em", "f1" and "substring_em" (best over the answer aliases;
// 0 unless the episode ended with an answer), "format" (the all-or-nothing
// protocol check over every turn) and "total", which is also the returned
// reward: Rewards.Outcome * components[Rewards.Scorer] + Rewards.Format *
// format. Process rewards are not included; they were paid per turn. Meant
// for a finished episode; before that it scores the episode as it stands.
func (e *ToolEnv) Outcome() (float64, map[string]float64) {
	e.mu.Lock()
	turns := make([]reward.FormatTurn, len(e.turns))
	for i, t := range e.turns {
		calls, err := ParseToolCalls(t.Action.Text)
		turns[i] = reward.FormatTurn{Text: t.Action.Text, CallsOK: err == nil && len(calls) > 0}
	}
	answered, answer := e.stop == StopAnswer, e.answer
	e.mu.Unlock()

	c := map[string]float64{reward.NameEM: 0, reward.NameF1: 0, reward.NameSubstringEM: 0}
	if answered {
		c[reward.NameEM] = reward.Best(reward.ExactMatch, answer, e.task.Answers)
		c[reward.NameF1] = reward.Best(reward.F1, answer, e.task.Answers)
		c[reward.NameSubstringEM] = reward.Best(reward.SubstringMatch, answer, e.task.Answers)
	}
	c[reward.NameFormat] = reward.Format(turns)
	w := e.cfg.Rewards
	c[reward.NameTotal] = w.Outcome*c[w.Scorer] + w.Format*c[reward.NameFormat]
	return c[reward.NameTotal], c
}
