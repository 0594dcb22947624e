package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/trainer/store"
)

// tinyCorpus has one passage per city; each query word below occurs in
// exactly one passage, so the best hit is known without computing BM25.
const tinyCorpus = `{"title": "Paris", "text": "Paris is the capital of France, on the Seine."}
{"title": "Berlin", "text": "Berlin is the capital of Germany, on the Spree."}
{"title": "Lyon", "text": "Lyon lies where the Rhone meets the Saone."}
{"title": "Hamburg", "text": "Hamburg is a port on the Elbe."}
`

func TestIndexAndSearch(t *testing.T) {
	t.Parallel() // independent of the shared run
	corpus := writeFile(t, "corpus.jsonl", tinyCorpus)
	db := filepath.Join(t.TempDir(), "idx.db")
	r := ok(t, "index", "--corpus", corpus, "--out", db)
	if !strings.Contains(r.stdout, "indexed 4 passages from "+corpus+" into "+db) {
		t.Errorf("index summary:\n%s", r)
	}
	if _, err := os.Stat(db); err != nil {
		t.Fatalf("index not written: %v", err)
	}

	r = ok(t, "search", "--index", db, "Spree")
	if !strings.HasPrefix(r.stdout, "1. Berlin  (score ") || !strings.Contains(r.stdout, "Berlin is the capital of Germany, on the Spree.") {
		t.Errorf("search Spree: want Berlin first with its text:\n%s", r)
	}

	// --json: one object per hit; "Elbe" and "Saone" each match one
	// passage, so there are exactly two hits whatever --k allows.
	r = ok(t, "search", "--index", db, "--json", "--k", "4", "Elbe", "Saone")
	got := map[string]bool{}
	for _, l := range lines(r.stdout) {
		var h struct {
			Title, Text string
			Score       *float64
		}
		if err := json.Unmarshal([]byte(l), &h); err != nil {
			t.Fatalf("--json line %q: %v", l, err)
		}
		if h.Score == nil || *h.Score <= 0 || h.Text == "" {
			t.Errorf("hit %q: want a positive score and the passage text", l)
		}
		got[h.Title] = true
	}
	if len(got) != 2 || !got["Hamburg"] || !got["Lyon"] {
		t.Errorf("--json hits %v, want Hamburg and Lyon:\n%s", got, r)
	}

	r = ok(t, "search", "--index", db, "--k", "1", "capital")
	if n := strings.Count(r.stdout, "(score "); n != 1 {
		t.Errorf("--k 1 printed %d hits:\n%s", n, r)
	}
	r = ok(t, "search", "--index", db, "zebra")
	if strings.TrimSpace(r.stdout) != "no results" {
		t.Errorf("query matching nothing:\n%s", r)
	}
}

func TestIndexAndSearchErrors(t *testing.T) {
	t.Parallel() // independent of the shared run
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	fails(t, []string{missing}, "search", "--index", missing, "capital")
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("search of a missing index created %s", missing)
	}
	corpus := writeFile(t, "corpus.jsonl", tinyCorpus)
	db := filepath.Join(dir, "idx.db")
	ok(t, "index", "--corpus", corpus, "--out", db)
	fails(t, []string{"give a QUERY"}, "search", "--index", db)

	fails(t, []string{filepath.Join(dir, "none.jsonl")}, "index", "--corpus", filepath.Join(dir, "none.jsonl"), "--out", filepath.Join(dir, "x.db"))
	broken := writeFile(t, "broken.jsonl", "{\"title\": \"A\", \"text\": \"fine\"}\n{broken\n")
	fails(t, []string{broken, "line 2"}, "index", "--corpus", broken, "--out", filepath.Join(dir, "b.db"))
	fails(t, []string{`"corpus"`}, "index", "--out", filepath.Join(dir, "c.db"))
}

// index --out replaces an index, and nothing else: not its own corpus
// (under its name or another: a link), not a trajectory store, not any
// other file; what it refuses is left as it was.
func TestIndexRefusesToReplace(t *testing.T) {
	t.Parallel() // independent of the shared run
	dir := t.TempDir()
	corpus := writeFile(t, "corpus.jsonl", tinyCorpus)
	db := filepath.Join(dir, "idx.db")
	ok(t, "index", "--corpus", corpus, "--out", db)
	ok(t, "index", "--corpus", corpus, "--out", db) // an index is replaced

	link := filepath.Join(dir, "link.jsonl")
	if err := os.Link(corpus, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{corpus, link} {
		fails(t, []string{"--out " + out, "is the corpus " + corpus}, "index", "--corpus", corpus, "--out", out)
	}
	s, err := store.Open(filepath.Join(dir, "store.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	notes := writeFile(t, "notes.txt", "not an index\n")
	for _, out := range []string{s.Path(), notes} {
		before, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		files := dirNames(t, filepath.Dir(out))
		fails(t, []string{out, "not a search index"}, "index", "--corpus", corpus, "--out", out)
		if after, err := os.ReadFile(out); err != nil || !bytes.Equal(after, before) {
			t.Errorf("the refused index changed %s (%v)", out, err)
		}
		if now := dirNames(t, filepath.Dir(out)); !slices.Equal(now, files) {
			t.Errorf("the refused index left files beside %s: %v, before %v", out, now, files)
		}
	}
	if after, err := os.ReadFile(corpus); err != nil || string(after) != tinyCorpus {
		t.Errorf("the refused index changed its corpus (%v)", err)
	}
}

// dirNames lists the names in a folder.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
