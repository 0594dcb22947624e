// Package reward scores an agent's episode: answer metrics (exact match,
// F1, substring match) with the official SQuAD/HotpotQA normalisation, a
// format reward for the <think>/<tool_call>/<answer> protocol, and small
// per-turn process rewards. It is pure arithmetic over strings and counts;
// the envs package gathers the facts and calls it.
package reward

import (
	"strings"
	"unicode"
)

// Normalize is normalize_answer of the official SQuAD v1.1 and HotpotQA
// evaluation scripts: lowercase, delete ASCII punctuation (Python's
// string.punctuation), replace the words a/an/the by a space, and collapse
// runs of whitespace into single spaces with no leading or trailing space.
func Normalize(s string) string {
	s = strings.ToLower(s)
	s = strings.Map(func(r rune) rune {
		if isASCIIPunct(r) {
			return -1
		}
		return r
	}, s)
	s = removeArticles(s)
	return strings.Join(strings.FieldsFunc(s, isPySpace), " ")
}

// isASCIIPunct reports whether r is in Python's string.punctuation:
// !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~
func isASCIIPunct(r rune) bool {
	return r < 0x80 && (r >= '!' && r <= '/' || r >= ':' && r <= '@' || r >= '[' && r <= '`' || r >= '{' && r <= '~')
}

// isWordRune is Python's \w for str patterns: alphanumeric or underscore.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_'
}

// isPySpace is Python's str.isspace, which str.split() splits on: Go's
// Unicode White_Space plus the ASCII separators \x1c-\x1f.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f
}

// removeArticles does re.sub(r'\b(a|an|the)\b', ' ', s): every maximal run
// of word characters equal to a, an or the becomes a single space.
func removeArticles(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	word := -1 // byte offset where the current word run started
	flush := func(end int) {
		switch w := s[word:end]; w {
		case "a", "an", "the":
			b.WriteByte(' ')
		default:
			b.WriteString(w)
		}
		word = -1
	}
	for i, r := range s {
		if isWordRune(r) {
			if word < 0 {
				word = i
			}
			continue
		}
		if word >= 0 {
			flush(i)
		}
		b.WriteRune(r)
	}
	if word >= 0 {
		flush(len(s))
	}
	return b.String()
}
