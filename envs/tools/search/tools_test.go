package search

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
)

func callTool(t *testing.T, tool envs.Tool, args string) envs.Result {
	t.Helper()
	r, err := tool.Call(context.Background(), json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s(%s): %v", tool.Name(), args, err)
	}
	return r
}

func TestSearchTool(t *testing.T) {
	idx := buildIndex(t, append([]Passage{{"Epsilon", "a fox\nwith two lines"}}, zoo...))
	tool := NewSearchTool(idx, 2)
	if tool.Name() != "search" {
		t.Fatalf("Name = %q", tool.Name())
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(tool.Parameters(), &schema); err != nil || schema.Type != "object" || schema.Properties["query"] == nil || !slices.Equal(schema.Required, []string{"query"}) {
		t.Fatalf("Parameters = %s (%v)", tool.Parameters(), err)
	}
	// The schema is rendered into the prompt: its text, key order included
	// (type, properties, required, as OpenAI-style schemas are written), is
	// part of what a trained policy has seen and must not drift.
	wantSchema := `{"type":"object","properties":{"query":{"type":"string","description":"keywords or a question to search for"}},"required":["query"],"additionalProperties":false}`
	if got := string(tool.Parameters()); got != wantSchema {
		t.Errorf("Parameters =\n%s\nwant\n%s", got, wantSchema)
	}
	// "jumping fox": Beta matches both terms and ranks first; of the other
	// fox passages, Epsilon (6 tokens with its title) is longer than
	// Alpha's (3), so Alpha ranks second; k = 2 cuts Epsilon.
	r := callTool(t, tool, `{"query": "jumping fox"}`)
	want := "Doc 1 (Title: Beta) blue fox jumps\nDoc 2 (Title: Alpha) red fox"
	if !r.OK || r.Content != want || !slices.Equal(r.Refs, []string{"Beta", "Alpha"}) {
		t.Fatalf("result = %+v, want content %q and refs [Beta Alpha]", r, want)
	}
	r = callTool(t, NewSearchTool(idx, 0), `{"query": "lines"}`)
	if r.Content != "Doc 1 (Title: Epsilon) a fox with two lines" {
		t.Errorf("line breaks not folded: %q", r.Content)
	}
	if r = callTool(t, tool, `{"query": "zebra"}`); !r.OK || r.Content != "No results." || len(r.Refs) != 0 {
		t.Errorf("no match: %+v", r)
	}
	for _, q := range []string{`AND OR NOT`, `title:x`, `a*`, `NEAR(fox, 2)`} {
		if r := callTool(t, tool, `{"query": "`+q+`"}`); !r.OK {
			t.Errorf("query %s: %+v, want a successful call", q, r)
		}
	}
	// A call that cannot run because of its arguments is an error, which
	// envs turns into an error observation and counts as an invalid call.
	for _, c := range []struct{ args, want string }{
		{`{"query": ""}`, `search: the query "" has no words to search for`},
		{`{"query": "((("}`, `search: the query "(((" has no words to search for`},
		{`{"query": "\""}`, `search: the query "\"" has no words to search for`},
		{`{}`, `search: missing required argument "query"`},
		{`{"query": 3}`, "search: arguments must be a JSON object"},
		{`not json`, "search: arguments must be a JSON object"},
	} {
		_, err := tool.Call(context.Background(), json.RawMessage(c.args))
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(strings.ToLower(err.Error()), "sql") || strings.Contains(err.Error(), "fts5") {
			t.Errorf("args %s: err = %v, want %q", c.args, err, c.want)
		}
	}
}

func TestLookupTool(t *testing.T) {
	idx := buildIndex(t, zoo)
	tool := NewLookupTool(idx)
	if tool.Name() != "lookup" {
		t.Fatalf("Name = %q", tool.Name())
	}
	r := callTool(t, tool, `{"title": "gamma"}`)
	if !r.OK || r.Content != "(Title: Gamma) green frog" || !slices.Equal(r.Refs, []string{"Gamma"}) {
		t.Errorf("hit: %+v", r)
	}
	if r := callTool(t, tool, `{"title": "Omega"}`); r.OK || r.Content != `No passage is titled "Omega"; use search to find titles.` || len(r.Refs) != 0 {
		t.Errorf("miss: %+v, want a call that ran and found nothing", r)
	}
	for _, c := range []struct{ args, want string }{
		{`{"title": "  "}`, "lookup: the title is empty"},
		{`{}`, `lookup: missing required argument "title"`},
		{`[1]`, "lookup: arguments must be a JSON object"},
	} {
		if _, err := tool.Call(context.Background(), json.RawMessage(c.args)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("args %s: err = %v, want %q", c.args, err, c.want)
		}
	}
}

func TestToolErrorWhenIndexClosed(t *testing.T) {
	idx := buildIndex(t, zoo)
	idx.Close()
	if _, err := NewSearchTool(idx, 3).Call(context.Background(), json.RawMessage(`{"query": "fox"}`)); err == nil {
		t.Error("search on a closed index: no error")
	}
	if _, err := NewLookupTool(idx).Call(context.Background(), json.RawMessage(`{"title": "Alpha"}`)); err == nil {
		t.Error("lookup on a closed index: no error")
	}
}
