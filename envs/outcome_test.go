package envs

import (
	"context"
	"strings"
	"testing"
)

func TestOutcome(t *testing.T) {
	think := "<think>The tower is in Paris.</think>\n"
	search := "<think>look it up</think>\n" + call("echo", `{"text":"q"}`)
	cases := []struct {
		name   string
		scorer string
		turns  []string
		want   map[string]float64
	}{
		{
			// "city of paris" vs "paris": 1 shared, P = 1/3, R = 1, F1 = (2/3)/(4/3) = 1/2;
			// vs "paris france": P = 1/3, R = 1/2, F1 = (1/3)/(5/6) = 2/5. Best 1/2.
			// "city of paris" contains "paris": substring 1. EM 0, so
			// total = 1*0 + 0.1*format = 0.1.
			"partial answer", "em", []string{search, think + "<answer>the City of Paris</answer>"},
			map[string]float64{"em": 0, "f1": 0.5, "substring_em": 1, "format": 1, "total": 0.1},
		},
		{
			// Correct and well formed: total = 1*1 + 0.1*1 = 1.1.
			"exact", "em", []string{search, think + "<answer>Paris</answer>"},
			map[string]float64{"em": 1, "f1": 1, "substring_em": 1, "format": 1, "total": 1.1},
		},
		{
			// The same answer scored by substring match: 1 + 0.1.
			"substring scorer", "substring_em", []string{search, think + "<answer>the City of Paris</answer>"},
			map[string]float64{"em": 0, "f1": 0.5, "substring_em": 1, "format": 1, "total": 1.1},
		},
		{
			// F1 scorer: 0.5 + 0.1.
			"f1 scorer", "f1", []string{search, think + "<answer>the City of Paris</answer>"},
			map[string]float64{"em": 0, "f1": 0.5, "substring_em": 1, "format": 1, "total": 0.6},
		},
		{
			// Right answer, broken format (text after </answer>): 1 + 0.
			"bad format", "em", []string{"<answer>Paris</answer> done"},
			map[string]float64{"em": 1, "f1": 1, "substring_em": 1, "format": 0, "total": 1},
		},
		{
			// A malformed call in an earlier turn spoils the format.
			"malformed earlier call", "em", []string{"<tool_call>{oops}</tool_call>", "<answer>Paris</answer>"},
			map[string]float64{"em": 1, "f1": 1, "substring_em": 1, "format": 0, "total": 1},
		},
		{
			// No answer: everything 0.
			"no answer", "em", []string{search, "I give up."},
			map[string]float64{"em": 0, "f1": 0, "substring_em": 0, "format": 0, "total": 0},
		},
	}
	for _, c := range cases {
		cfg := testConfig()
		cfg.Rewards.Scorer = c.scorer
		e := newEnv(t, cfg, &echoTool{})
		for _, text := range c.turns {
			step(t, e, text)
		}
		total, comp := e.Outcome()
		if len(comp) != len(c.want) {
			t.Errorf("%s: components %v", c.name, comp)
		}
		for k, v := range c.want {
			if !near(comp[k], v) {
				t.Errorf("%s: %s = %v, want %v", c.name, k, comp[k], v)
			}
		}
		if !near(total, c.want["total"]) {
			t.Errorf("%s: total %v, want %v", c.name, total, c.want["total"])
		}
	}
}

// An episode cut by a limit has no answer, even if an earlier turn held
// answer tags next to a tool call.
func TestOutcomeWithoutAnswerStop(t *testing.T) {
	cfg := testConfig()
	cfg.MaxTurns = 1
	e := newEnv(t, cfg, &echoTool{})
	step(t, e, "<answer>Paris</answer>"+call("echo", `{"text":"x"}`))
	total, comp := e.Outcome()
	if total != 0 || comp["em"] != 0 {
		t.Errorf("total %v, components %v", total, comp)
	}
}

// fixedScorer answers reward with no components.
type fixedScorer struct{ reward float64 }

func (s fixedScorer) Score(context.Context, ScoredEpisode) (float64, map[string]float64, error) {
	return s.reward, nil, nil
}
func (s fixedScorer) String() string { return "fixed" }

// A weighted external reward that is finite itself but overflows the total
// (1e308 from the answer metric plus 1e308) is a failed scoring, named.
func TestExternalRewardOverflowingTheTotalFails(t *testing.T) {
	cfg := testConfig()
	var reported error
	cfg.External = ExternalConfig{Scorer: fixedScorer{1e308}, OnError: func(err error) { reported = err }}
	cfg.Rewards.Outcome, cfg.Rewards.External.Weight = 1e308, 1
	e := newEnv(t, cfg)
	step(t, e, "<answer>Paris</answer>")
	total, c := e.Outcome()
	if total != 1e308+0.1 || c["external"] != 0 || c["external_failed"] != 1 {
		t.Fatalf("total %v, components %v", total, c)
	}
	if reported == nil || !strings.Contains(reported.Error(), "task t1: external reward: fixed: reward 1e+308 weighted by 1 is 1e+308, which makes the total +Inf") {
		t.Fatalf("reported %v", reported)
	}
}
