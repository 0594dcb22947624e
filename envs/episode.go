package envs

import (
	"context"

	"github.com/agentrl/agentrl/trajectory"
)

// Episode is a finished episode as an external reward sees it, in JSON.
type Episode struct {
	TaskID   string                `json:"task_id"`
	Dataset  string                `json:"dataset"`
	Question string                `json:"question"`
	Gold     []string              `json:"gold"`   // the gold answer first, then aliases
	Answer   string                `json:"answer"` // "" when the episode ended without one
	Stop     trajectory.StopReason `json:"stop"`   // why it ended
	Turns    []EpisodeTurn         `json:"turns"`
}

// EpisodeTurn is one assistant turn and the tool calls it made.
type EpisodeTurn struct {
	Text  string        `json:"text"`
	Calls []EpisodeCall `json:"calls"`
}

// EpisodeCall is one tool call of a turn.
type EpisodeCall struct {
	Tool       string `json:"tool"` // "" when the turn's calls did not parse
	Args       string `json:"args"`
	Result     string `json:"result"`
	OK         bool   `json:"ok"`
	ParseError string `json:"parse_error,omitempty"`
}

// Scorer is a reward computed outside the environment (an external
// command or service): a number and named components. Messages name a
// Scorer as %v prints it, so it should be a fmt.Stringer.
type Scorer interface {
	Score(ctx context.Context, ep Episode) (float64, map[string]float64, error)
}

// ExternalConfig adds a Scorer's reward to the outcome reward, weighted
// by EnvConfig.Rewards.External.Weight, each call bounded by its Timeout
// (0 = 10 s).
type ExternalConfig struct {
	Scorer  Scorer      // nil = no external reward
	OnError func(error) // told of each failed Score call (for the logs), if set
}

// episode renders the environment's history; the caller holds e.mu.
func (e *ToolEnv) episode() Episode {
	ep := Episode{TaskID: e.task.ID, Dataset: e.task.Dataset, Question: e.task.Question, Gold: e.task.Answers,
		Stop: e.stop, Turns: make([]EpisodeTurn, len(e.turns))}
	if ep.Gold == nil {
		ep.Gold = []string{}
	}
	if e.stop == trajectory.StopAnswer {
		ep.Answer = e.answer
	}
	for i, t := range e.turns {
		calls := make([]EpisodeCall, len(t.Result.Calls))
		for j, c := range t.Result.Calls {
			calls[j] = EpisodeCall{Tool: c.Name, Args: c.Args, Result: c.Result, OK: c.OK, ParseError: c.ParseError}
		}
		ep.Turns[i] = EpisodeTurn{Text: t.Action.Text, Calls: calls}
	}
	return ep
}
