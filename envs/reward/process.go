package reward

import "strings"

// TurnFacts counts what happened in one tool-calling turn.
type TurnFacts struct {
	Valid      int // calls that parsed, validated and ran without error, not repeats
	Invalid    int // calls that could not be run because of the call itself
	Repeated   int // valid calls identical to an earlier call of the episode
	NewSupport int // supporting passages retrieved for the first time
}

// Process is the turn's process reward under c (see Config).
func (c Config) Process(f TurnFacts) float64 {
	r := float64(f.Invalid)*c.InvalidCall + float64(f.Repeated)*c.RepeatCall + float64(f.NewSupport)*c.Support
	if f.Valid > 0 {
		r += c.ValidCall
	}
	return r
}

// MatchSupport returns the supporting titles that occur among refs,
// compared without case and surrounding whitespace, each once, in the order
// of support.
func MatchSupport(refs, support []string) []string {
	var found []string
	for _, s := range support {
		key := strings.TrimSpace(s)
		if containsFold(found, key) {
			continue
		}
		if containsFold(refs, key) {
			found = append(found, s)
		}
	}
	return found
}

// containsFold reports whether list holds key, ignoring case and
// surrounding whitespace.
func containsFold(list []string, key string) bool {
	for _, s := range list {
		if strings.EqualFold(strings.TrimSpace(s), key) {
			return true
		}
	}
	return false
}
