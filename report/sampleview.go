package report

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Display limits for long texts of a sample trajectory, in bytes.
const (
	maxTextLen        = 4000 // assistant text, question, answer
	maxObservationLen = 1500 // tool results (search results run long)
)

// sampleView is a trajectory shown as a conversation.
type sampleView struct {
	Why, ID, Meta    string
	Question, Gold   string
	Turns            []turnView
	Answer           string
	Correct          bool
	Reward, Outcome  string
	Components, Stop string
	Error            string
}

// turnView is one assistant turn and its tool calls.
type turnView struct {
	N      int
	Tokens string // "12 tokens"
	Text   string
	Calls  []callView
	Reward string // "" when not recorded
	// Evidence says how many supporting passages the turn retrieved first
	// ("1 supporting passage"), "" for none.
	Evidence string
}

// callView is one tool call and the result the model was shown.
type callView struct {
	Tool, Args string
	OK         bool
	ParseError string
	Result     string
	Latency    string // "" when not recorded
}

// sampleViews turns the chosen trajectories into views.
func sampleViews(samples []sample) []sampleView {
	var out []sampleView
	for _, s := range samples {
		t := s.t
		v := sampleView{
			Why: s.why, ID: t.ID,
			Meta: fmt.Sprintf("iteration %d · %s · task %s (%s, %d hops) · group %d, sample %d · policy version %d · %d tokens",
				t.Iteration, t.Split, t.TaskID, t.Dataset, t.Hops, t.Group, t.Sample, t.PolicyVersion, len(t.Tokens)),
			Question: Clip(t.Question, maxTextLen), Gold: Clip(strings.Join(t.Gold, " | "), maxTextLen),
			Answer: Clip(t.Answer, maxTextLen), Correct: s.correct,
			Reward: num(t.Reward), Outcome: num(t.Outcome), Components: componentList(t.Components),
			Stop: string(t.Stop), Error: Clip(t.Error, maxTextLen),
		}
		if v.Answer == "" {
			v.Answer = "(none)"
		}
		if t.Support > 0 {
			v.Meta += fmt.Sprintf(" · evidence %d of %d", t.Evidence, t.Support)
		}
		if t.Stop.Truncated() {
			v.Stop += " (truncated)"
		}
		for i, u := range t.Turns {
			tv := turnView{N: i + 1, Tokens: plural(u.GenTokens, "token"), Text: Clip(u.Text, maxTextLen)}
			if !math.IsNaN(u.ProcessReward) && u.ProcessReward != 0 {
				tv.Reward = num(u.ProcessReward)
			}
			if u.Evidence > 0 {
				tv.Evidence = plural(u.Evidence, "supporting passage")
			}
			for _, c := range u.Calls {
				cv := callView{Tool: Clip(c.Name, maxTextLen), Args: Clip(c.Args, maxTextLen), OK: c.OK,
					ParseError: Clip(c.ParseError, maxTextLen), Result: Clip(c.Result, maxObservationLen)}
				if c.Name != "" && !math.IsNaN(c.LatencyMS) {
					cv.Latency = num(c.LatencyMS) + " ms"
				}
				tv.Calls = append(tv.Calls, cv)
			}
			v.Turns = append(v.Turns, tv)
		}
		out = append(out, v)
	}
	return out
}

// componentList formats reward components as "name value, ..." by name.
func componentList(c map[string]float64) string {
	return joinComponents(c, func(k string, v float64) string { return k + " " + num(v) })
}

// joinComponents formats each reward component with f, in name order,
// joined by ", ".
func joinComponents(c map[string]float64, f func(name string, v float64) string) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = f(k, c[k])
	}
	return strings.Join(parts, ", ")
}

// plural writes "1 token", "2 tokens".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
