package search

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// LookupName is the lookup tool's registered name.
const LookupName = "lookup"

// NewLookupTool returns the tool "lookup" with parameters
// {"title": string, required}: it returns the passage with that title
// (exact, else case-insensitive) as "(Title: t) text" on one line, with
// Result.Refs set to the title. An unknown title is a call that ran and
// found nothing: OK false, content saying so. A missing or empty title is
// an error (the call itself is wrong), as is a failure of the index.
func NewLookupTool(idx *Index) envs.Tool {
	return &indexTool{
		name:        LookupName,
		description: "Return the passage with exactly this title.",
		param:       "title", paramDoc: "the exact title of a passage",
		run: func(ctx context.Context, title string) (envs.Result, error) { return lookup(ctx, idx, title) },
	}
}

// lookup runs one call of the lookup tool (see NewLookupTool).
func lookup(ctx context.Context, idx *Index, title string) (envs.Result, error) {
	if strings.TrimSpace(title) == "" {
		return envs.Result{}, errors.New("lookup: the title is empty")
	}
	p, ok, err := idx.Lookup(ctx, title)
	if err != nil {
		return envs.Result{}, err
	}
	if !ok {
		return envs.Result{Content: fmt.Sprintf("No passage is titled %q; use search to find titles.", title)}, nil
	}
	return envs.Result{Content: render(p.Title, p.Text), OK: true, Refs: []string{p.Title}}, nil
}
