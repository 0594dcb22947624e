package tokenizer

import (
	"sort"
	"strings"
)

// addedToken is one entry of tokenizer.json's "added_tokens".
type addedToken struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// matcher finds added tokens in text: the leftmost match, and among the
// matches starting there the longest (the reference's leftmost-longest
// Aho-Corasick search).
type matcher struct {
	first [256]bool         // bytes some pattern starts with
	byte0 map[byte][]string // patterns by first byte, longest first
	ids   map[string]int32
}

// newMatcher returns nil when there is nothing to match.
func newMatcher(patterns map[string]int32) *matcher {
	if len(patterns) == 0 {
		return nil
	}
	m := &matcher{byte0: map[byte][]string{}, ids: patterns}
	for p := range patterns {
		m.first[p[0]] = true
		m.byte0[p[0]] = append(m.byte0[p[0]], p)
	}
	for _, list := range m.byte0 {
		sort.Slice(list, func(i, j int) bool {
			if len(list[i]) != len(list[j]) {
				return len(list[i]) > len(list[j])
			}
			return list[i] < list[j]
		})
	}
	return m
}

// find returns the first added token in s as [start, end) and its id, or
// start = -1.
func (m *matcher) find(s string) (start, end int, id int32) {
	for i := 0; i < len(s); i++ {
		if !m.first[s[i]] {
			continue
		}
		for _, p := range m.byte0[s[i]] {
			if strings.HasPrefix(s[i:], p) {
				return i, i + len(p), m.ids[p]
			}
		}
	}
	return -1, -1, 0
}
