package search

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/fixtures"
)

func TestLoadCorpusRealFiles(t *testing.T) {
	cases := []struct {
		rel             []string
		n               int // record counts from data/raw/SOURCES.md
		title, textHead string
	}{
		{[]string{"data", "raw", "hotpotqa", "hotpotqa_train_corpus.json"}, 994, "Demon Dice",
			"Demon Dice, originally published as Chaos Progenitus, is a collectible dice game created by Lester Smith (designer of the better-known Dragon Dice) and Tim Brown. In it, each player"},
		{[]string{"data", "raw", "2wikimultihopqa", "2wikimultihopqa_corpus.json"}, 6119, "Teutberga",
			"Teutberga( died 11 November 875) was a queen of Lotharingia"},
		{[]string{"data", "raw", "nq", "sample_data.jsonl"}, 1000, "Evan Morris",
			"Evan Morris Evan L. Morris (January 26, 1977"},
	}
	for _, c := range cases {
		path := fixtures.Path(t, c.rel...)
		ps, err := LoadCorpus(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != c.n {
			t.Errorf("%s: %d passages, want %d", path, len(ps), c.n)
		}
		if ps[0].Title != c.title || !strings.HasPrefix(ps[0].Text, c.textHead) {
			t.Errorf("%s: first passage = %q / %.120q, want %q / %q...", path, ps[0].Title, ps[0].Text, c.title, c.textHead)
		}
	}
}

func TestLoadCorpusCanonicalJSONL(t *testing.T) {
	path := writeFile(t, "c.jsonl", `{"title": "A", "text": "alpha text"}`+"\n\n"+`{"id": 7, "title": " B ", "text": "beta\ntext "}`+"\n")
	ps, err := LoadCorpus(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Passage{{"A", "alpha text"}, {"B", "beta\ntext"}}
	if len(ps) != 2 || ps[0] != want[0] || ps[1] != want[1] {
		t.Fatalf("got %q, want %q", ps, want)
	}
}

// The layout is told from whole records: a JSONL corpus whose first
// record is longer than any read buffer (here 100 KiB) is still JSONL, in
// both of its layouts, and its lines are still counted from the file's
// first.
func TestLoadCorpusLongFirstRecord(t *testing.T) {
	long := strings.Repeat("word ", 20<<10)
	for name, first := range map[string]string{
		"canonical.jsonl": `{"title": "Long", "text": "` + long + `"}`,
		"flashrag.jsonl":  `{"id": "0", "contents": "\"Long\"\n` + long + `"}`,
	} {
		path := writeFile(t, name, "\n"+first+"\n"+`{"title": "B", "text": "b"}`+"\n")
		ps, err := LoadCorpus(path)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(ps) != 2 || ps[0] != (Passage{"Long", strings.TrimSpace(long)}) || ps[1] != (Passage{"B", "b"}) {
			t.Errorf("%s: %d passages, the first titled %q with %d bytes of text; want Long with %d, then B",
				name, len(ps), ps[0].Title, len(ps[0].Text), len(strings.TrimSpace(long)))
		}
		broken := writeFile(t, name, "\n"+first+"\n"+`{"title": "B"}`+"\n")
		if _, err := LoadCorpus(broken); err == nil || !strings.Contains(err.Error(), "line 3") {
			t.Errorf("%s with a broken third line: err = %v, want it to name line 3", name, err)
		}
	}
}

func TestLoadCorpusBroken(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"jsonl.jsonl", `{"title": "A", "text": "a"}` + "\n" + `{"title": "B", "text": "b"}` + "\n" + `{"title": "C", "text": ` + "\n", "line 3"},
		{"jsonl-no-text.jsonl", `{"title": "A", "text": "a"}` + "\n" + `{"title": "B"}` + "\n", "line 2"},
		{"jsonl-empty-title.jsonl", `{"title": "A", "text": "a"}` + "\n" + `{"title": " ", "text": "b"}` + "\n", "line 2: passage has an empty title"},
		{"flashrag.jsonl", `{"id": "0", "contents": "\"A\"\na"}` + "\n" + `{"id": "1", "contents": "no newline"}` + "\n", "line 2"},
		{"dict.json", "{\n  \"A\": [\"a\"],\n  \"B\": \"not a list\"\n}\n", "line 3"},
		{"dict-syntax.json", "{\n  \"A\": [\"a\"],\n  \"B\": [\"b\",,]\n}\n", "line 3"},
		{"dict-empty-text.json", "{\n  \"A\": [\"a\"],\n  \"B\": [\" \"]\n}\n", "line 3: passage \"B\" has an empty text"},
		{"dict-cut.json", "{\n  \"A\": [\"a\"],\n  \"B", "line 3"},
		{"array-empty-title.json", "[\n  {\"title\": \"A\", \"text\": \"a\"},\n  {\"title\": \"\", \"text\": \"b\"}\n]\n", "line 3: passage has an empty title"},
		{"array.json", "[\n  {\"title\": \"A\", \"text\": \"a\"},\n  {\"title\": \"B\"}\n]\n", "line 3"},
		{"array-syntax.json", "[\n  {\"title\": \"A\", \"text\": \"a\"},\n\n  {\"title\": \"B\" \"text\": \"b\"}\n]\n", "line 4"},
		{"text.txt", "hello\n", "not JSON"},
		{"empty.json", "[]", "no passages"},
		{"blank.jsonl", "\n \n", "empty file"},
	}
	for _, c := range cases {
		path := writeFile(t, c.name, c.body)
		_, err := LoadCorpus(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to name the file and %q", c.name, err, c.want)
		}
	}
	if _, err := LoadCorpus(filepath.Join(t.TempDir(), "absent.jsonl")); err == nil || !strings.Contains(err.Error(), "absent.jsonl") {
		t.Errorf("absent file: err = %v, want it to name the file", err)
	}
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
