package reward

import (
	"fmt"
	"math"
)

// Config weighs the reward terms. The outcome reward of an episode is
// Outcome*metric(Scorer) + Format*format; each turn's process reward is
// ValidCall (once per turn with at least one valid call) + Support per
// supporting passage found for the first time + InvalidCall per invalid call
// + RepeatCall per repeated call. Penalties are negative weights.
type Config struct {
	// Scorer is the answer metric of the outcome reward: "em", "f1" or
	// "substring_em". Default "em", the headline metric of the QA benchmarks.
	Scorer string `yaml:"scorer"`
	// Outcome weighs the answer metric. Default 1: the task is to answer.
	Outcome float64 `yaml:"outcome"`
	// Format weighs the all-or-nothing format reward. Default 0.1: enough to
	// teach the protocol early, small enough that a well-formed wrong answer
	// (0.1) stays far below a correct one (1.1).
	Format float64 `yaml:"format"`
	// ValidCall rewards a turn whose tool calls include at least one that
	// parsed, validated and ran without error. Default 0.02, once per turn,
	// so calling tools until the turn limit earns at most a few hundredths
	// and never competes with answering.
	ValidCall float64 `yaml:"valid_call"`
	// Support rewards each supporting passage (Task.Support) that a call
	// retrieved for the first time in the episode. Default 0.05: bounded by
	// the number of supporting passages (2 for HotpotQA), so it cannot be
	// farmed by searching more.
	Support float64 `yaml:"support"`
	// InvalidCall is added per call that could not be run: unparseable,
	// unknown tool, arguments failing the schema, or rejected by the tool.
	// Default -0.05.
	InvalidCall float64 `yaml:"invalid_call"`
	// RepeatCall is added per valid call identical (same tool, same
	// arguments up to case and whitespace) to an earlier call of the
	// episode; such a call earns no ValidCall credit. Default -0.05.
	RepeatCall float64 `yaml:"repeat_call"`
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Scorer:      NameEM,
		Outcome:     1,
		Format:      0.1,
		ValidCall:   0.02,
		Support:     0.05,
		InvalidCall: -0.05,
		RepeatCall:  -0.05,
	}
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
	}
	for _, w := range weights {
		if math.IsNaN(w.v) || math.IsInf(w.v, 0) {
			return fmt.Errorf("reward config: weight %s is %v, want a finite number", w.name, w.v)
		}
	}
	return nil
}
