package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// LookupName is the lookup tool's registered name.
const LookupName = "lookup"

// lookupTool is the "lookup" tool over an Index.
type lookupTool struct{ idx *Index }

// NewLookupTool returns the tool "lookup" with parameters
// {"title": string, required}: it returns the passage with that title
// (exact, else case-insensitive) as "(Title: t) text" on one line, with
// Result.Refs set to the title. An unknown title is a call that ran and
// found nothing: OK false, content saying so. A missing or empty title is
// an error (the call itself is wrong), as is a failure of the index.
func NewLookupTool(idx *Index) envs.Tool { return &lookupTool{idx: idx} }

// Name returns the registered name.
func (t *lookupTool) Name() string { return LookupName }

// Description tells the model what the tool does.
func (t *lookupTool) Description() string {
	return "Return the passage with exactly this title."
}

// Parameters is the JSON schema of the arguments.
func (t *lookupTool) Parameters() json.RawMessage {
	return oneStringParam("title", "the exact title of a passage")
}

// Call runs one call (see the constructor for the result and errors).
func (t *lookupTool) Call(ctx context.Context, args json.RawMessage) (envs.Result, error) {
	title, err := stringArg(LookupName, args, "title")
	if err != nil {
		return envs.Result{}, err
	}
	if strings.TrimSpace(title) == "" {
		return envs.Result{}, errors.New("lookup: the title is empty")
	}
	p, ok, err := t.idx.Lookup(ctx, title)
	if err != nil {
		return envs.Result{}, err
	}
	if !ok {
		return envs.Result{Content: fmt.Sprintf("No passage is titled %q; use search to find titles.", title)}, nil
	}
	return envs.Result{Content: render(p.Title, p.Text), OK: true, Refs: []string{p.Title}}, nil
}
