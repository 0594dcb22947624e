package reward

import (
	"fmt"
	"strings"
)

// Metric scores a predicted answer against one gold answer, in [0, 1].
type Metric func(pred, gold string) float64

// ExactMatch is 1 when the normalised prediction equals the normalised gold
// answer (the official SQuAD/HotpotQA exact_match_score), else 0.
func ExactMatch(pred, gold string) float64 {
	if Normalize(pred) == Normalize(gold) {
		return 1
	}
	return 0
}

// F1 is the token-level F1 of the official HotpotQA script: the harmonic
// mean of precision and recall over the multiset of normalised tokens the
// two answers share. When either side normalises to yes, no or noanswer,
// the answers must be equal after normalisation or the score is 0 (HotpotQA's
// special rule, so "no" never earns partial credit against "no way").
func F1(pred, gold string) float64 {
	p, g := Normalize(pred), Normalize(gold)
	if (isSpecial(p) || isSpecial(g)) && p != g {
		return 0
	}
	pt, gt := strings.Fields(p), strings.Fields(g)
	count := make(map[string]int, len(gt))
	for _, t := range gt {
		count[t]++
	}
	same := 0
	for _, t := range pt {
		if count[t] > 0 {
			count[t]--
			same++
		}
	}
	if same == 0 {
		return 0
	}
	precision := float64(same) / float64(len(pt))
	recall := float64(same) / float64(len(gt))
	return 2 * precision * recall / (precision + recall)
}

func isSpecial(s string) bool { return s == "yes" || s == "no" || s == "noanswer" }

// SubstringMatch is 1 when the normalised gold answer occurs inside the
// normalised prediction (Agent-R1's subem_check), else 0. A gold answer that
// normalises to "" (e.g. "The") never matches: it would be inside every
// prediction and reward anything.
func SubstringMatch(pred, gold string) float64 {
	g := Normalize(gold)
	if g != "" && strings.Contains(Normalize(pred), g) {
		return 1
	}
	return 0
}

// Best is the highest score of pred against any of the gold answers
// (aliases); 0 when there are none.
func Best(m Metric, pred string, golds []string) float64 {
	best := 0.0
	for _, g := range golds {
		best = max(best, m(pred, g))
	}
	return best
}

// Metric names, as used by Config.Scorer and as outcome component keys.
const (
	NameEM          = "em"
	NameF1          = "f1"
	NameSubstringEM = "substring_em"
	NameFormat      = "format"
	NameTotal       = "total"
)

// MetricByName returns the metric called name: "em", "f1" or "substring_em".
func MetricByName(name string) (Metric, error) {
	switch name {
	case NameEM:
		return ExactMatch, nil
	case NameF1:
		return F1, nil
	case NameSubstringEM:
		return SubstringMatch, nil
	}
	return nil, fmt.Errorf("unknown answer metric %q (known: %s, %s, %s)", name, NameEM, NameF1, NameSubstringEM)
}

// Correct reports whether answer equals one of the gold answers after the
// official SQuAD/HotpotQA normalisation (ExactMatch): the "correct" of a
// trajectory and the store's accuracy views. An answer that normalises to
// "" never matches, so an episode without an answer is never correct.
func Correct(answer string, gold []string) bool {
	if Normalize(answer) == "" {
		return false
	}
	return Best(ExactMatch, answer, gold) == 1
}
