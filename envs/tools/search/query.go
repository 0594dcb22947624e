package search

import (
	"strings"
	"unicode"
)

// maxTerms bounds how many distinct terms one query contributes to the
// FTS5 expression, so a pasted paragraph cannot make a query arbitrarily slow.
const maxTerms = 64

// Terms splits free text into the words the index can match: maximal runs
// of letters, numbers and combining marks, lowercased, deduplicated, in
// order of first appearance, at most 64. Everything else (quotes,
// parentheses, '*', ':', '-', '^', '+') separates words, so FTS5 syntax in
// user text never reaches the query parser.
func Terms(query string) []string {
	var terms []string
	seen := map[string]bool{}
	for _, f := range strings.FieldsFunc(query, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.IsMark(r)
	}) {
		w := strings.ToLower(f)
		if seen[w] || !hasLetterOrNumber(w) {
			continue
		}
		seen[w] = true
		terms = append(terms, w)
		if len(terms) == maxTerms {
			break
		}
	}
	return terms
}

func hasLetterOrNumber(w string) bool {
	return strings.IndexFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) >= 0
}

// matchExpr builds the FTS5 MATCH expression for terms: each term is a
// double-quoted string (so AND, OR, NOT, NEAR and column names are plain
// words) and the strings are joined with OR. OR rather than FTS5's implicit
// AND because a natural-language question rarely has every one of its
// words in the passage that answers it; BM25 then ranks passages that
// match more, and rarer, terms first.
func matchExpr(terms []string) string {
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + t + `"` // Terms never contain a quote
	}
	return strings.Join(quoted, " OR ")
}
