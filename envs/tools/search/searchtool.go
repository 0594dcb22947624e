package search

import (
	"context"
	"encoding/json"
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

// searchTool is the "search" tool over an Index.
type searchTool struct {
	idx *Index
	k   int
}

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
	return &searchTool{idx: idx, k: k}
}

// Name returns the registered name.
func (t *searchTool) Name() string { return SearchName }

// Description tells the model what the tool does.
func (t *searchTool) Description() string {
	return "Search the passage collection by keywords (BM25); returns the best matching passages with their titles."
}

// Parameters is the JSON schema of the arguments.
func (t *searchTool) Parameters() json.RawMessage {
	return oneStringParam("query", "keywords or a question to search for")
}

// Call runs one call (see the constructor for the result and errors).
func (t *searchTool) Call(ctx context.Context, args json.RawMessage) (envs.Result, error) {
	query, err := stringArg(SearchName, args, "query")
	if err != nil {
		return envs.Result{}, err
	}
	hits, err := t.idx.Search(ctx, query, t.k)
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

// oneStringParam is the JSON schema of a tool taking one required string,
// with its keys in the conventional order (type, properties, required):
// the schema is part of the prompt, so its text is kept stable.
func oneStringParam(name, description string) json.RawMessage {
	n, _ := json.Marshal(name)
	d, _ := json.Marshal(description)
	return json.RawMessage(`{"type":"object","properties":{` + string(n) + `:{"type":"string","description":` + string(d) +
		`}},"required":[` + string(n) + `],"additionalProperties":false}`)
}

// stringArg reads a call's one required string argument.
func stringArg(tool string, args json.RawMessage, name string) (string, error) {
	var a map[string]json.RawMessage
	if err := decodeArgs(tool, args, &a); err != nil {
		return "", err
	}
	raw, ok := a[name]
	if !ok || string(raw) == "null" {
		return "", fmt.Errorf("%s: missing required argument %q", tool, name)
	}
	var v string
	if err := decodeArgs(tool, raw, &v); err != nil {
		return "", err
	}
	return v, nil
}

// decodeArgs unmarshals the arguments of a call to tool.
func decodeArgs(tool string, args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		return fmt.Errorf("%s: arguments must be a JSON object: %w", tool, err)
	}
	return nil
}
