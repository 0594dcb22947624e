package reward

import (
	"fmt"
	"math"
	"time"

	"github.com/agentrl/agentrl/internal/deftag"
)

// Config weighs the reward terms. The outcome reward of an episode is
// Outcome*metric(Scorer) + Format*format; each turn's process reward is
// ValidCall (once per turn with at least one valid call) + Support per
// supporting passage found for the first time + InvalidCall per invalid call
// + RepeatCall per repeated call. Penalties are negative weights.
type Config struct {
	// Scorer is the answer metric of the outcome reward: "em", "f1" or
	// "substring_em"; "em" is the headline metric of the QA benchmarks.
	Scorer string `yaml:"scorer" default:"em" doc:"answer metric of the outcome reward: em, f1 or substring_em"`
	// Outcome weighs the answer metric: the task is to answer.
	Outcome float64 `yaml:"outcome" default:"1.0" doc:"weight of the answer metric"`
	// Format weighs the all-or-nothing format reward: 0.1 is enough to
	// teach the protocol early and small enough that a well-formed wrong
	// answer (0.1) stays far below a correct one (1.1).
	Format float64 `yaml:"format" default:"0.1" doc:"weight of the all-or-nothing format reward"`
	// ValidCall rewards a turn whose tool calls include at least one that
	// parsed, validated and ran without error, once per turn (0.02 is a
	// typical value: calling tools until the turn limit then earns at most
	// a few hundredths and never competes with answering).
	ValidCall float64 `yaml:"valid_call" default:"0" doc:"process reward per turn with a valid tool call"`
	// Support rewards each supporting passage (Task.Support) that a call
	// retrieved for the first time in the episode; bounded by the number
	// of supporting passages (2 for HotpotQA), so it cannot be farmed by
	// searching more (0.05 is a typical value).
	Support float64 `yaml:"support" default:"0" doc:"process reward per supporting passage first retrieved"`
	// InvalidCall is added per call that could not be run: unparseable,
	// unknown tool, arguments failing the schema, or rejected by the tool
	// (a penalty is negative, e.g. -0.05).
	InvalidCall float64 `yaml:"invalid_call" default:"0" doc:"process reward per invalid tool call (negative = penalty)"`
	// RepeatCall is added per valid call identical (same tool, same
	// arguments up to case and whitespace) to an earlier call of the
	// episode; such a call earns no ValidCall credit.
	RepeatCall float64 `yaml:"repeat_call" default:"0" doc:"process reward per repeated tool call (negative = penalty)"`
	// External is a reward computed outside the trainer (package
	// reward/external), added to the outcome reward.
	External External `yaml:"external" doc:"a reward computed outside the trainer, added to the outcome reward"`
}

// External is a command or HTTP endpoint that receives each finished
// episode as JSON and answers {"reward": x, "components": {...}}. Neither
// Command nor URL set means no external reward.
type External struct {
	// Command is the program and its arguments, run once per episode.
	Command []string `yaml:"command" default:"[]" doc:"program and arguments run per episode: the episode's JSON on stdin, the answer on stdout"`
	// URL is the endpoint each episode is POSTed to, instead of a command.
	URL string `yaml:"url" default:"" doc:"endpoint each episode's JSON is POSTed to, instead of a command"`
	// Timeout bounds one scoring.
	Timeout time.Duration `yaml:"timeout" default:"10s" doc:"time limit of one scoring; a failed or late one counts 0 and sets the component external_failed"`
	// Weight weighs the external reward in the total.
	Weight float64 `yaml:"weight" default:"1.0" doc:"weight of the external reward in the total"`
	// MaxOutputMB bounds the answer read from the scorer.
	MaxOutputMB int `yaml:"max_output_mb" default:"1" doc:"most MiB of answer read from the scorer (the command's stdout, the url's response body); more fails the scoring"`
}

// DefaultConfig returns the defaults of the struct tags: the answer
// metric "em" weighted 1, the format reward 0.1, no process rewards and
// no external reward.
func DefaultConfig() Config {
	var c Config
	deftag.MustApply(&c)
	return c
}

// Validate checks the scorer name and that every weight is finite.
func (c Config) Validate() error {
	if _, err := MetricByName(c.Scorer); err != nil {
		return fmt.Errorf("reward config: %w", err)
	}
	weights := []struct {
		name string
		v    float64
	}{
		{"outcome", c.Outcome}, {"format", c.Format}, {"valid_call", c.ValidCall},
		{"support", c.Support}, {"invalid_call", c.InvalidCall}, {"repeat_call", c.RepeatCall},
		{"external.weight", c.External.Weight},
	}
	for _, w := range weights {
		if math.IsNaN(w.v) || math.IsInf(w.v, 0) {
			return fmt.Errorf("reward config: weight %s is %v, want a finite number", w.name, w.v)
		}
	}
	return nil
}
