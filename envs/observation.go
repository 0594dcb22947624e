package envs

import (
	"fmt"
	"unicode/utf8"
)

// errorObservation is the text the model sees for a failed call.
func errorObservation(err error) string { return "Error: " + err.Error() }

// truncationMarker ends an observation that was cut, saying how many
// characters were dropped.
func truncationMarker(dropped int) string {
	return fmt.Sprintf("\n...[truncated %d chars]", dropped)
}

// capObservation cuts s so that it and its truncation marker hold at most
// limit characters (runes). The marker is sized for all of s being dropped,
// which is at least as long as the one finally written, so the bound holds.
func capObservation(s string, limit int) string {
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s
	}
	keep := max(0, limit-utf8.RuneCountInString(truncationMarker(n)))
	cut, i := 0, 0
	for i = range s {
		if cut == keep {
			break
		}
		cut++
	}
	return s[:i] + truncationMarker(n-keep)
}
