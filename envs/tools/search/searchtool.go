package search

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// DefaultK is the number of passages the search tool returns when
// NewSearchTool is given k < 1.
const DefaultK = 5

// SearchName is the search tool's registered name.
const SearchName = "search"

// NewSearchTool returns the tool "search" with parameters
// {"query": string, required}. It returns the k best passages (DefaultK
// when k < 1), one per line, in the form
//
//	Doc 1 (Title: Walls and Bridges) Walls and Bridges is the fifth studio album ...
//	Doc 2 (Title: ...) ...
//
// with line breaks inside a passage folded to spaces, and sets Result.Refs
// to their titles; no match is a successful call with content "No results.".
// As envs expects, a call that cannot run because of its arguments (a query
// with no words, such as "" or "(((") returns an error whose message is
// meant for the model; so does a failure of the index.
func NewSearchTool(idx *Index, k int) envs.Tool {
	if k < 1 {
		k = DefaultK
	}
	return &indexTool{
		name:        SearchName,
		description: "Search the passage collection by keywords (BM25); returns the best matching passages with their titles.",
		param:       "query", paramDoc: "keywords or a question to search for",
		run: func(ctx context.Context, query string) (envs.Result, error) { return search(ctx, idx, k, query) },
	}
}

// search runs one call of the search tool (see NewSearchTool).
func search(ctx context.Context, idx *Index, k int, query string) (envs.Result, error) {
	hits, err := idx.Search(ctx, query, k)
	if errors.Is(err, ErrNoTerms) {
		return envs.Result{}, fmt.Errorf("search: the query %q has no words to search for", query)
	}
	if err != nil {
		return envs.Result{}, err
	}
	if len(hits) == 0 {
		return envs.Result{Content: "No results.", OK: true}, nil
	}
	ps := make([]Passage, len(hits))
	refs := make([]string, len(hits))
	for i, h := range hits {
		ps[i] = Passage{Title: h.Title, Text: h.Text}
		refs[i] = h.Title
	}
	return envs.Result{Content: FormatDocs(ps), OK: true, Refs: refs}, nil
}

// FormatDocs writes passages as the search tool returns them, one per
// line: "Doc 1 (Title: t) text", "Doc 2 ...".
func FormatDocs(ps []Passage) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "Doc %d %s", i+1, render(p.Title, p.Text))
	}
	return b.String()
}

// render formats one passage as "(Title: t) text" on a single line.
func render(title, text string) string {
	return "(Title: " + oneLine(title) + ") " + oneLine(text)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
