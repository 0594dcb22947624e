package tasks

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/internal/fixtures"
)

// Counts and first records below are read off the files by eye and from
// data/raw/SOURCES.md.

func raw(t *testing.T, rel ...string) string {
	t.Helper()
	return fixtures.Path(t, append([]string{"data", "raw"}, rel...)...)
}

func load(t *testing.T, path, format string, n int) []envs.Task {
	t.Helper()
	ts, err := Load(path, format)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != n {
		t.Fatalf("%s: %d tasks, want %d", path, len(ts), n)
	}
	return ts
}

func TestLoadHotpotQAOriginal(t *testing.T) {
	for _, format := range []string{"", FormatHotpotQA} {
		ts := load(t, raw(t, "hotpotqa", "hotpotqa_train.json"), format, 100)
		want := envs.Task{ID: "5a77ec115542992a6e59dff7", Dataset: "hotpotqa", Question: "If Gallu is a demon Lilu is what?",
			Answers: []string{"a spirit"}, Support: []string{"Alû", "Lilu (mythology)"}, Hops: 2,
			Meta: map[string]string{"type": "bridge", "level": "easy"}}
		checkTask(t, ts[0], want)
		types := map[string]int{}
		for _, task := range ts {
			types[task.Meta["type"]]++
			if task.Hops != 2 || len(task.Support) != 2 {
				t.Errorf("%s: hops %d support %q, want 2 and two titles", task.ID, task.Hops, task.Support)
			}
		}
		if types["bridge"] != 78 || types["comparison"] != 22 {
			t.Errorf("types = %v, want 78 bridge and 22 comparison", types)
		}
	}
}

func TestLoadTwoWikiDev(t *testing.T) {
	ts := load(t, raw(t, "2wikimultihopqa", "dev.json"), "", 1000)
	checkTask(t, ts[0], envs.Task{ID: "0", Dataset: "2wikimultihopqa", Question: "Who is the mother of the director of film Polish-Russian War (Film)?", Answers: []string{"Małgorzata Braunek"}})
	checkTask(t, ts[1], envs.Task{ID: "1", Dataset: "2wikimultihopqa", Question: "Which film came out first, Blind Shaft or The Mask Of Fu Manchu?", Answers: []string{"Mask of Fu Manchu", "The Mask of Fu Manchu"}})
	checkTask(t, ts[2], envs.Task{ID: "2", Dataset: "2wikimultihopqa", Question: "When did John V, Prince Of Anhalt-Zerbst's father die?", Answers: []string{"12 June 1516"}})
}

func TestLoadNQ(t *testing.T) {
	ts := load(t, raw(t, "nq", "NQ-open.dev.jsonl"), "", 3610)
	checkTask(t, ts[0], envs.Task{ID: "0", Dataset: "nq", Question: "when was the last time anyone was on the moon", Answers: []string{"14 December 1972 UTC", "December 1972"}})
	ts = load(t, raw(t, "nq", "NQ-open.efficientqa.dev.1.1.jsonl"), FormatNQ, 1800)
	checkTask(t, ts[1], envs.Task{ID: "1", Dataset: "nq", Question: "who sings ain't nothing but a good time", Answers: []string{"Poison"}})
	// FlashRAG layout; 16 newlines but 17 records (no newline at the end).
	ts = load(t, raw(t, "nq", "test.jsonl"), "", 17)
	checkTask(t, ts[0], envs.Task{ID: "test_0", Dataset: "nq", Question: "who got the first nobel prize in physics", Answers: []string{"Wilhelm Conrad Röntgen"}})
}

func TestLoadIRCoT(t *testing.T) {
	cases := []struct {
		dir, dataset, id, answer, firstTitle string
		n, hops, titles                      int
	}{
		{"hotpotqa", "hotpotqa", "5a8ed9f355429917b4a5bddd", "Walls and Bridges", "Milk and Honey (album)", 29, 2, 5},
		{"musique", "musique", "2hop__292995_8796", "1862", "The Last Horse", 20, 2, 5},
		{"2wikimultihopqa", "2wikimultihopqa", "35bf3490096d11ebbdafac1f6bf848b6", "no", "Kurram Garhi", 20, 0, 5},
	}
	for _, c := range cases {
		ts := load(t, raw(t, c.dir, "gold_with_3_distractors_context_cot_qa_codex.txt"), "", c.n)
		got := ts[0]
		if got.ID != c.id || got.Dataset != c.dataset || !slices.Equal(got.Answers, []string{c.answer}) || got.Hops != c.hops {
			t.Errorf("%s: first task %+v, want id %s dataset %s answer %q hops %d", c.dir, got, c.id, c.dataset, c.answer, c.hops)
		}
		if !strings.HasPrefix(got.Meta["context_titles"], `["`+c.firstTitle+`"`) || strings.Count(got.Meta["context_titles"], `","`) != c.titles-1 {
			t.Errorf("%s: context_titles = %s, want %d titles starting with %q", c.dir, got.Meta["context_titles"], c.titles, c.firstTitle)
		}
		if got.Question == "" || got.Meta["cot"] == "" || strings.Contains(got.Meta["cot"], "So the answer is") {
			t.Errorf("%s: question %q, cot %q", c.dir, got.Question, got.Meta["cot"])
		}
	}
	// SOURCES.md: 145, 108 and 110 paragraphs in all.
	for dir, want := range map[string]int{"hotpotqa": 145, "musique": 108, "2wikimultihopqa": 110} {
		ts := load(t, raw(t, dir, "gold_with_3_distractors_context_cot_qa_codex.txt"), FormatIRCoT, map[string]int{"hotpotqa": 29, "musique": 20, "2wikimultihopqa": 20}[dir])
		n := 0
		for _, task := range ts {
			n += strings.Count(task.Meta["context_titles"], `","`) + 1
		}
		if n != want {
			t.Errorf("%s: %d paragraphs, want %d", dir, n, want)
		}
	}
}

func TestLoadVerlRealParquet(t *testing.T) {
	ts := load(t, raw(t, "verl", "train.parquet"), "", 800)
	want := envs.Task{ID: "0", Dataset: "verl", Question: "8,3:9,4", Meta: map[string]string{"prompt": `[{"role":"user","content":"8,3:9,4"}]`}}
	checkTask(t, ts[0], want)
	ts = load(t, raw(t, "verl", "test.parquet"), FormatVerl, 200)
	checkTask(t, ts[1], envs.Task{ID: "1", Dataset: "verl", Question: "2,5:9,2", Meta: map[string]string{"prompt": `[{"role":"user","content":"2,5:9,2"}]`}})
}

func TestLoadCorpusFileIsNotTasks(t *testing.T) {
	path := raw(t, "nq", "sample_data.jsonl")
	_, err := Load(path, "")
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "cannot tell") {
		t.Fatalf("err = %v, want a layout error naming the file and line 1", err)
	}
}

func checkTask(t *testing.T, got, want envs.Task) {
	t.Helper()
	if got.ID != want.ID || got.Dataset != want.Dataset || got.Question != want.Question || got.Hops != want.Hops ||
		!slices.Equal(got.Answers, want.Answers) || !slices.Equal(got.Support, want.Support) || !metaHas(got.Meta, want.Meta) {
		t.Errorf("task\n got %+v\nwant %+v", got, want)
	}
}

// metaHas reports whether got holds every key of want with its value.
func metaHas(got, want map[string]string) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}
