package agent

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trainer/config"
)

// The synthetic world's word-level tokenizer encodes every warm-start
// demonstration without its unknown token: the scripted chains, reading
// (whose prompt lists more passages than a search returns: "Doc 3"), and
// the search demonstrations of every query kind and the first searches
// of every question, among them searches for a question's own text, whose
// last word and punctuation run into the call's closing ("Gorko.\"}}\n").
// It lacked that piece, so the warm start taught the model to end such a
// call with <unk>, which no parser reads.
func TestDemonstrationsHaveNoUnknownPieces(t *testing.T) {
	ctx := context.Background()
	w, index := world(t)
	a, err := New(ctx, Spec{Config: config.Default(), Index: index, World: w})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	unk, ok := a.Tokenizer.TokenID(tokenizer.UnknownToken)
	if !ok {
		t.Fatalf("the word-level tokenizer has no %s", tokenizer.UnknownToken)
	}
	check := func(what string, msgs []tokenizer.Message) {
		t.Helper()
		ids, _, err := a.Format.Render(msgs, a.Schemas, false)
		if err != nil {
			t.Fatal(err)
		}
		if k := slices.Index(ids, unk); k >= 0 {
			t.Errorf("%s: %s after %q", what, tokenizer.UnknownToken, a.Tokenizer.Decode(ids[max(0, k-6):k], false))
		}
	}
	questionQueries := 0
	for _, task := range append(append([]envs.Task(nil), w.Train...), w.Test...) {
		msgs, err := Demonstration(ctx, w, task, a.Tools, false)
		if err != nil {
			t.Fatal(err)
		}
		check("scripted "+task.ID, msgs)
		if msgs, err = ReadingDemonstration(ctx, w, task, a.Tools, rand.New(rand.NewPCG(1, 2))); err != nil {
			t.Fatal(err)
		}
		check("reading "+task.ID, msgs)
		check("first search "+task.ID, FirstSearch(task))
		if task.Hops != 1 {
			continue
		}
		queries := []int{QueryQuestion, QueryName, QueryRetry}
		if _, ok := w.Passage(task.Answers[0]); ok {
			queries = append(queries, QueryConfirm)
		}
		queries = append(queries, QueryFollow)
		for _, q := range queries {
			msgs, err := SearchDemonstration(ctx, task, a.Tools, q)
			if err != nil {
				t.Fatal(err)
			}
			check("search "+task.ID, msgs)
			var call struct{ Query string }
			if json.Unmarshal(msgs[2].ToolCalls[0].Arguments, &call) == nil && call.Query == task.Question {
				questionQueries++
			}
		}
	}
	if questionQueries == 0 {
		t.Fatal("no search demonstration queried a question's text: the check above covers nothing")
	}
}
