package config

import (
	"reflect"
	"slices"
	"strings"
)

// maxSuggestions caps the close matches listed for an unknown key.
const maxSuggestions = 3

// unknownKeyMsg says that path is not a key, suggesting close matches.
func unknownKeyMsg(root reflect.Value, path string) string {
	m := closeMatches(path, allPaths(root, ""))
	switch len(m) {
	case 0:
		return "unknown key"
	case 1:
		return "unknown key (did you mean " + m[0] + "?)"
	}
	return "unknown key (did you mean " + strings.Join(m[:len(m)-1], ", ") + " or " + m[len(m)-1] + "?)"
}

// closeMatches returns the known paths nearest to path: within an edit
// distance of about a quarter of its length, extending it at the same
// depth (algo for algorithm), or ending in the same last name (clip_high
// for algorithm.clip_high), best first.
func closeMatches(path string, known []string) []string {
	type cand struct {
		path string
		dist int
	}
	limit := max(2, len(path)/4)
	last := lastName(path)
	var cs []cand
	for _, k := range known {
		d := editDistance(path, k)
		prefix := strings.HasPrefix(k, path) && strings.Count(k, ".") == strings.Count(path, ".")
		if d <= limit || prefix || lastName(k) == last {
			cs = append(cs, cand{k, d})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.dist - b.dist })
	out := make([]string, 0, maxSuggestions)
	for i := 0; i < len(cs) && i < maxSuggestions; i++ {
		out = append(out, cs[i].path)
	}
	return out
}

func lastName(path string) string {
	return path[strings.LastIndex(path, ".")+1:]
}

// editDistance is the Levenshtein distance between a and b in bytes
// (keys are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
