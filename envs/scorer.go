package envs

import (
	"context"
	"slices"

	"github.com/agentrl/agentrl/trajectory"
)

// ScoredEpisode is a finished episode as an external reward sees it, in JSON.
type ScoredEpisode struct {
	TaskID   string                `json:"task_id"`
	Dataset  string                `json:"dataset"`
	Question string                `json:"question"`
	Gold     []string              `json:"gold"`   // the gold answer first, then aliases
	Answer   string                `json:"answer"` // "" when the episode ended without one
	Stop     trajectory.StopReason `json:"stop"`   // why it ended
	Turns    []trajectory.Turn     `json:"turns"`  // each with its calls, "calls": [] when it made none
}

// Scorer is a reward computed outside the environment (an external
// command or service): a number and named components. Messages name a
// Scorer as %v prints it, so it should be a fmt.Stringer.
type Scorer interface {
	Score(ctx context.Context, ep ScoredEpisode) (float64, map[string]float64, error)
}

// ExternalConfig adds a Scorer's reward to the outcome reward, weighted
// by EnvConfig.Rewards.External.Weight, each call bounded by its Timeout
// (0 = 10 s).
type ExternalConfig struct {
	Scorer  Scorer      // nil = no external reward
	OnError func(error) // told of each failed Score call (for the logs), if set
}

// episode renders the environment's history; the caller holds e.mu.
func (e *ToolEnv) episode() ScoredEpisode {
	ep := ScoredEpisode{TaskID: e.task.ID, Dataset: e.task.Dataset, Question: e.task.Question, Gold: e.task.Answers,
		Stop: e.stop, Turns: slices.Clone(e.turns)}
	if ep.Gold == nil {
		ep.Gold = []string{}
	}
	if e.stop == trajectory.StopAnswer {
		ep.Answer = e.answer
	}
	for i := range ep.Turns {
		if ep.Turns[i].Calls == nil {
			ep.Turns[i].Calls = []trajectory.ToolCall{}
		}
	}
	return ep
}
