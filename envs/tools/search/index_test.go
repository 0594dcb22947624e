package search

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// zoo is a four-passage corpus small enough to score BM25 by hand. Token
// counts (title + text, after stemming): Alpha 3, Beta 4, Gamma 3, Delta 5;
// average 15/4 = 3.75.
var zoo = []Passage{
	{"Alpha", "red fox"},
	{"Beta", "blue fox jumps"},
	{"Gamma", "green frog"},
	{"Delta", "yellow bird sings loudly"},
}

func buildIndex(t testing.TB, ps []Passage) *Index {
	t.Helper()
	path := filepath.Join(t.TempDir(), "index.db")
	if err := BuildIndex(context.Background(), path, ps, nil); err != nil {
		t.Fatal(err)
	}
	idx, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	return idx
}

func TestSearchBM25Scores(t *testing.T) {
	idx := buildIndex(t, zoo)
	if idx.Len() != 4 {
		t.Fatalf("Len = %d, want 4", idx.Len())
	}
	// FTS5 bm25 with k1 = 1.2, b = 0.75: idf = ln((N - n + 0.5) / (n + 0.5)),
	// score = idf * f(k1+1) / (f + k1(1 - b + b*|D|/avgdl)), f weighted by column.
	// "red" is in Alpha's text only: idf = ln(3.5/1.5) = 0.847298,
	// |D| = 3: denominator 1 + 1.2*(0.25 + 0.75*3/3.75) = 2.02,
	// score = 0.847298 * 2.2 / 2.02 = 0.922800.
	// "alpha" is in Alpha's title, weight 2 so f = 2:
	// score = 0.847298 * 4.4 / (2 + 1.02) = 1.234474.
	for _, c := range []struct {
		q     string
		score float64
	}{{"red", 0.922800}, {"alpha", 1.234474}} {
		hits, err := idx.Search(context.Background(), c.q, 5)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].Title != "Alpha" || hits[0].Text != "red fox" || math.Abs(hits[0].Score-c.score) > 1e-5 {
			t.Errorf("Search(%q) = %+v, want Alpha with score %.6f", c.q, hits, c.score)
		}
	}
}

func TestSearchOrRanksMoreMatchesFirst(t *testing.T) {
	idx := buildIndex(t, zoo)
	// OR semantics: a passage needs only one of the words. "jumping" stems to
	// "jump"; "jump", "blue" (Beta) and "frog" (Gamma) each occur in 1 of 4
	// passages, idf = ln(3.5/1.5) = 0.8473. Beta (|D| = 4) has two terms:
	// 2 * 0.8473 * 2.2 / (1 + 1.2*(0.25 + 0.75*4/3.75)) = 2 * 0.8248 = 1.650;
	// Gamma (|D| = 3) has one: 0.8473 * 2.2 / 2.02 = 0.9228.
	hits, err := idx.Search(context.Background(), "jumping blue frog", 5)
	if err != nil {
		t.Fatal(err)
	}
	if titles := titlesOf(hits); !slices.Equal(titles, []string{"Beta", "Gamma"}) || math.Abs(hits[0].Score-1.650) > 1e-3 || math.Abs(hits[1].Score-0.9228) > 1e-4 {
		t.Fatalf("hits = %+v, want Beta (1.650) then Gamma (0.9228)", hits)
	}
	if hits, _ := idx.Search(context.Background(), "jumping blue frog", 1); len(hits) != 1 {
		t.Fatalf("k = 1 returned %d hits", len(hits))
	}
}

func TestSearchHostileQueries(t *testing.T) {
	idx := buildIndex(t, zoo)
	for _, q := range []string{`AND OR NOT`, `title:fox`, `text:frog`, `fox*`, `NEAR(fox frog)`, `"red`, `red"fox"`, `-fox +frog ^bird`, `{title text}: fox`, `fox AND`, `OR`} {
		if _, err := idx.Search(context.Background(), q, 5); err != nil {
			t.Errorf("Search(%q): %v", q, err)
		}
	}
	hits, err := idx.Search(context.Background(), "title:frog", 5)
	if err != nil || len(hits) != 1 || hits[0].Title != "Gamma" {
		t.Errorf(`Search("title:frog") = %v, %v; want Gamma (the word frog anywhere)`, hits, err)
	}
	for _, q := range []string{``, `"`, `(((`, `*`, ` : `} {
		if _, err := idx.Search(context.Background(), q, 5); !errors.Is(err, ErrNoTerms) {
			t.Errorf("Search(%q) err = %v, want ErrNoTerms", q, err)
		}
	}
	if _, err := idx.Search(context.Background(), "fox", 0); err == nil {
		t.Error("k = 0: no error")
	}
}

func TestLookup(t *testing.T) {
	idx := buildIndex(t, []Passage{{"Paris", "capital of France"}, {"paris", "a lower-case twin"}, {"Texas", "a state"}})
	ctx := context.Background()
	cases := []struct {
		q, title string
		ok       bool
	}{
		{"Paris", "Paris", true},
		{"paris", "paris", true},
		{"  Texas ", "Texas", true},
		{"TEXAS", "Texas", true},
		{"Tex", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		p, ok, err := idx.Lookup(ctx, c.q)
		if err != nil || ok != c.ok || p.Title != c.title {
			t.Errorf("Lookup(%q) = %q, %v, %v; want %q, %v", c.q, p.Title, ok, err, c.title, c.ok)
		}
	}
}

func TestOpenErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	absent := filepath.Join(dir, "absent.db")
	corrupt := filepath.Join(dir, "corrupt.db")
	if err := os.WriteFile(corrupt, []byte(strings.Repeat("not a database ", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite3", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t(x)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, p := range []string{absent, corrupt, other} {
		if _, err := Open(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("Open(%s) err = %v, want an error naming the file", p, err)
		}
	}
}

func TestBuildIndexProgressAndAtomicity(t *testing.T) {
	ps := make([]Passage, 2500)
	for i := range ps {
		ps[i] = Passage{Title: "T" + string(rune('a'+i%26)) + string(rune('a'+i/26%26)) + string(rune('a'+i/676)), Text: "some text"}
	}
	out := filepath.Join(t.TempDir(), "x.db")
	var calls [][2]int
	if err := BuildIndex(context.Background(), out, ps, func(d, n int) { calls = append(calls, [2]int{d, n}) }); err != nil {
		t.Fatal(err)
	}
	// one report per 1000 passages and one at the end
	if want := [][2]int{{1000, 2500}, {2000, 2500}, {2500, 2500}}; !slices.Equal(calls, want) {
		t.Errorf("progress calls = %v, want %v", calls, want)
	}
	before, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// A cancelled rebuild leaves the old index and no temporary file.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := BuildIndex(ctx, out, zoo, nil); err == nil || !strings.Contains(err.Error(), out) {
		t.Fatalf("cancelled build: err = %v, want an error naming %s", err, out)
	}
	after, err := os.ReadFile(out)
	if err != nil || string(after) != string(before) {
		t.Fatalf("cancelled build changed %s (err %v)", out, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(out))
	if len(entries) != 1 {
		t.Fatalf("directory holds %d files after a failed build, want 1", len(entries))
	}
	if err := BuildIndex(context.Background(), out, []Passage{{"A", "x"}, {"", "y"}}, nil); err == nil || !strings.Contains(err.Error(), "passage 1") {
		t.Errorf("empty title: err = %v, want it to name passage 1", err)
	}
}

// BuildIndex replaces an index, and refuses, leaving it as it is, any
// other file at out: a corpus, an SQLite database of other tables, a
// folder.
func TestBuildIndexRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus.jsonl")
	if err := os.WriteFile(corpus, []byte(`{"title": "A", "text": "a"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite3", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE runs(name TEXT)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, out := range []string{corpus, other, t.TempDir()} {
		before, _ := os.ReadFile(out)
		err := BuildIndex(context.Background(), out, zoo, nil)
		if err == nil || !strings.Contains(err.Error(), out+" exists and is not a search index") {
			t.Errorf("BuildIndex over %s: err = %v, want a refusal naming it", out, err)
		}
		if after, _ := os.ReadFile(out); string(after) != string(before) {
			t.Errorf("the refused BuildIndex changed %s", out)
		}
	}
}

func TestConcurrentSearch(t *testing.T) {
	idx := buildIndex(t, zoo)
	queries := []string{"fox", "frog", "bird sings", "red blue", "alpha", "yellow"}
	want := make([][]string, len(queries))
	for i, q := range queries {
		hits, err := idx.Search(context.Background(), q, 3)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = titlesOf(hits)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 32*len(queries))
	for g := range 32 {
		wg.Go(func() {
			for j := range queries {
				i := (g + j) % len(queries)
				hits, err := idx.Search(context.Background(), queries[i], 3)
				if err != nil {
					errs <- err
					continue
				}
				if got := titlesOf(hits); !slices.Equal(got, want[i]) {
					errs <- errors.New(queries[i] + ": " + strings.Join(got, ",") + " != " + strings.Join(want[i], ","))
				}
				if _, _, err := idx.Lookup(context.Background(), "Beta"); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func titlesOf(hits []Hit) []string {
	var ts []string
	for _, h := range hits {
		ts = append(ts, h.Title)
	}
	return ts
}
