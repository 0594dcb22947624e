package tasks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/envs"
	"github.com/parquet-go/parquet-go"
)

func write(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadHotpotQAHuggingFaceLayout(t *testing.T) {
	path := write(t, "hf.jsonl", `{"id": "q1", "question": "Which came first?", "answer": "A", "type": "comparison", "level": "hard",`+
		` "supporting_facts": {"title": ["A", "B", "A"], "sent_id": [0, 0, 1]}, "context": {"title": ["A", "B"], "sentences": [["a."], ["b."]]}}`+"\n")
	ts := load(t, path, "", 1)
	checkTask(t, ts[0], envs.Task{ID: "q1", Dataset: "hotpotqa", Question: "Which came first?", Answers: []string{"A"},
		Support: []string{"A", "B"}, Hops: 2, Meta: map[string]string{"type": "comparison", "level": "hard"}})
}

func TestLoadTwoWikiOriginalLayout(t *testing.T) {
	// The type says 2Wiki (bridge_comparison: two bridges and a comparison,
	// four supporting paragraphs).
	path := write(t, "dev.json", `[{"_id": "abc", "type": "bridge_comparison", "question": "Which film has the director born later, X or Y?",`+
		` "context": [["X", ["x."]], ["Y", ["y."]]], "supporting_facts": [["X", 0], ["Y", 0], ["P", 0], ["Q", 1]],`+
		` "evidences": [["X", "director", "P"]], "answer": "X"}]`)
	ts := load(t, path, "", 1)
	// Without evidences, the type (not HotpotQA's) and the absence of a level tell.
	other := write(t, "dev2.jsonl", `{"_id": "d", "type": "compositional", "question": "Where was the father of X born?",`+
		` "supporting_facts": [["X", 0], ["F", 1]], "answer": "Oslo"}`+"\n")
	checkTask(t, load(t, other, "", 1)[0], envs.Task{ID: "d", Dataset: "2wikimultihopqa", Question: "Where was the father of X born?",
		Answers: []string{"Oslo"}, Support: []string{"X", "F"}, Hops: 2, Meta: map[string]string{"type": "compositional"}})
	checkTask(t, ts[0], envs.Task{ID: "abc", Dataset: "2wikimultihopqa", Question: "Which film has the director born later, X or Y?",
		Answers: []string{"X"}, Support: []string{"X", "Y", "P", "Q"}, Hops: 4, Meta: map[string]string{"type": "bridge_comparison"}})
}

func TestLoadMuSiQue(t *testing.T) {
	// Support follows the decomposition (paragraph 3, then 0, then 5), not
	// the paragraph order; hops from the "3hop1__" prefix.
	path := write(t, "musique_ans_v1.0_dev.jsonl", `{"id": "3hop1__1_2_3", "question": "Q?", "answer": "Ans", "answer_aliases": ["A.", "Ans"], "answerable": true,`+
		` "paragraphs": [{"idx": 0, "title": "T0", "paragraph_text": "p", "is_supporting": true}, {"idx": 3, "title": "T3", "paragraph_text": "p", "is_supporting": true},`+
		` {"idx": 5, "title": "T5", "paragraph_text": "p", "is_supporting": true}, {"idx": 6, "title": "T6", "paragraph_text": "p", "is_supporting": false}],`+
		` "question_decomposition": [{"id": 1, "question": "a", "answer": "b", "paragraph_support_idx": 3}, {"id": 2, "question": "c", "answer": "d", "paragraph_support_idx": 0},`+
		` {"id": 3, "question": "e", "answer": "f", "paragraph_support_idx": 5}]}`+"\n"+
		`{"id": "2hop__9_8", "question": "Unanswerable?", "answer": "", "answer_aliases": [], "answerable": false, "paragraphs": [{"idx": 0, "title": "U", "paragraph_text": "p", "is_supporting": true}],`+
		` "question_decomposition": [{"id": 9, "paragraph_support_idx": null}, {"id": 8, "paragraph_support_idx": null}]}`+"\n")
	ts := load(t, path, "", 2)
	checkTask(t, ts[0], envs.Task{ID: "3hop1__1_2_3", Dataset: "musique", Question: "Q?", Answers: []string{"Ans", "A."},
		Support: []string{"T3", "T0", "T5"}, Hops: 3, Meta: map[string]string{"answerable": "true"}})
	checkTask(t, ts[1], envs.Task{ID: "2hop__9_8", Dataset: "musique", Question: "Unanswerable?", Support: []string{"U"}, Hops: 2,
		Meta: map[string]string{"answerable": "false"}})
}

func TestLoadFlashRAGWithMetadata(t *testing.T) {
	path := write(t, filepath.Join("HotpotQA", "dev.jsonl"), `{"id": "x1", "question": "Who?", "golden_answers": ["Bo", "Bob"],`+
		` "metadata": {"type": "bridge", "level": "medium", "supporting_facts": {"title": ["P", "Q"], "sent_id": [1, 2]}}}`+"\n")
	ts := load(t, path, "", 1)
	checkTask(t, ts[0], envs.Task{ID: "x1", Dataset: "hotpotqa", Question: "Who?", Answers: []string{"Bo", "Bob"},
		Support: []string{"P", "Q"}, Hops: 2, Meta: map[string]string{"type": "bridge", "level": "medium"}})
}

// agentR1Row is the row Agent-R1's examples/data_preprocess/hotpotqa.py writes.
type agentR1Row struct {
	DataSource string `parquet:"data_source"`
	Prompt     []struct {
		Role    string `parquet:"role"`
		Content string `parquet:"content"`
	} `parquet:"prompt,list"`
	Ability     string `parquet:"ability"`
	RewardModel struct {
		Style       string `parquet:"style"`
		GroundTruth string `parquet:"ground_truth"`
	} `parquet:"reward_model"`
	ExtraInfo struct {
		Split           string `parquet:"split"`
		Index           string `parquet:"index"`
		Answer          string `parquet:"answer"`
		Question        string `parquet:"question"`
		SupportingFacts string `parquet:"supporting_facts"`
		Level           string `parquet:"level"`
		Type            string `parquet:"type"`
	} `parquet:"extra_info"`
}

// searchR1Row is the row Search-R1's nq_search.py writes: the source
// columns plus the verl ones, ground truth {target: [...]}.
type searchR1Row struct {
	ID            string   `parquet:"id"`
	Question      string   `parquet:"question"`
	GoldenAnswers []string `parquet:"golden_answers,list"`
	DataSource    string   `parquet:"data_source"`
	Prompt        []struct {
		Role    string `parquet:"role"`
		Content string `parquet:"content"`
	} `parquet:"prompt,list"`
	Ability     string `parquet:"ability"`
	RewardModel struct {
		Style       string `parquet:"style"`
		GroundTruth struct {
			Target []string `parquet:"target,list"`
		} `parquet:"ground_truth"`
	} `parquet:"reward_model"`
	ExtraInfo struct {
		Split string `parquet:"split"`
		Index int64  `parquet:"index"`
	} `parquet:"extra_info"`
}

func TestLoadVerlAgentR1Parquet(t *testing.T) {
	var r agentR1Row
	r.DataSource = "hotpotqa/hotpot_qa"
	r.Prompt = append(r.Prompt, struct {
		Role    string `parquet:"role"`
		Content string `parquet:"content"`
	}{"user", "Question: Who wrote it?\nThink first."})
	r.Ability = "multihop_qa"
	r.RewardModel.Style = "rule"
	r.RewardModel.GroundTruth = "Ann Lee"
	r.ExtraInfo.Split, r.ExtraInfo.Index, r.ExtraInfo.Answer, r.ExtraInfo.Question = "train", "7", "Ann Lee", "Who wrote it?"
	r.ExtraInfo.SupportingFacts, r.ExtraInfo.Level, r.ExtraInfo.Type = `[["Book", 0], ["Ann Lee", 2]]`, "hard", "bridge"
	path := filepath.Join(t.TempDir(), "train.parquet")
	if err := parquet.WriteFile(path, []agentR1Row{r}); err != nil {
		t.Fatal(err)
	}
	ts := load(t, path, "", 1)
	checkTask(t, ts[0], envs.Task{ID: "train-7", Dataset: "hotpotqa", Question: "Who wrote it?", Answers: []string{"Ann Lee"},
		Support: []string{"Book", "Ann Lee"}, Hops: 2, Meta: map[string]string{
			"data_source": "hotpotqa/hotpot_qa", "ability": "multihop_qa", "split": "train", "type": "bridge", "level": "hard", "reward_style": "rule",
			"prompt": `[{"role":"user","content":"Question: Who wrote it?\nThink first."}]`}})
}

func TestLoadVerlSearchR1Parquet(t *testing.T) {
	var r searchR1Row
	r.ID, r.Question, r.GoldenAnswers, r.DataSource = "test_3", "who is it", []string{"Ann", "Anne"}, "nq"
	r.Prompt = append(r.Prompt, struct {
		Role    string `parquet:"role"`
		Content string `parquet:"content"`
	}{"system", "Be brief."}, struct {
		Role    string `parquet:"role"`
		Content string `parquet:"content"`
	}{"user", "Answer the question: who is it"})
	r.RewardModel.Style = "rule"
	r.RewardModel.GroundTruth.Target = []string{"Anne", "Ann", "Anne"}
	r.ExtraInfo.Split, r.ExtraInfo.Index = "test", 3
	path := filepath.Join(t.TempDir(), "test.parquet")
	if err := parquet.WriteFile(path, []searchR1Row{r}); err != nil {
		t.Fatal(err)
	}
	ts := load(t, path, FormatVerl, 1)
	// The question column wins over the prompt; ground truth over golden_answers.
	checkTask(t, ts[0], envs.Task{ID: "test_3", Dataset: "nq", Question: "who is it", Answers: []string{"Anne", "Ann"},
		Meta: map[string]string{"split": "test", "data_source": "nq"}})
}

func TestLoadBrokenInputs(t *testing.T) {
	cases := []struct {
		name, body, format, want string
	}{
		{"broken.jsonl", `{"question": "a", "answer": ["x"]}` + "\n" + `{"question": "b", "answer": ["y"]}` + "\n" + `{"question": "c", "answer": [` + "\n", "", "line 3"},
		{"no-answer.jsonl", `{"question": "a", "answer": ["x"]}` + "\n\n" + `{"question": "b", "answer": []}` + "\n", "", "line 3: nq record: no answer"},
		{"no-question.jsonl", `{"question": " ", "answer": ["x"]}` + "\n", FormatNQ, "line 1: nq record: no question"},
		{"dup.jsonl", `{"id": "a", "question": "q", "golden_answers": ["x"]}` + "\n" + `{"id": "a", "question": "r", "golden_answers": ["y"]}` + "\n", "", `line 2: id "a" already used at line 1`},
		{"array.json", "[\n  {\"_id\": \"1\", \"question\": \"q\", \"answer\": \"a\", \"supporting_facts\": []},\n  {\"_id\": \"2\", \"question\": \"q\", \"answer\": \"a\", \"supporting_facts\": [[\"T\"], 3]}\n]", "", "record 1 (line 3)"},
		{"array-syntax.json", "[\n  {\"question\": \"q\", \"answer\": [\"a\"]},\n  {\"question\": \"q\" \"answer\": [\"a\"]}\n]", "", "line 3"},
		{"bad-type.jsonl", `{"test_id": 0, "question": "q", "answer": {"x": 1}}` + "\n", "", "line 1: 2wikimultihopqa record: answer"},
		{"unknown.jsonl", `{"foo": 1}` + "\n", "", `line 1: cannot tell the dataset layout from keys ["foo"]`},
		{"any.jsonl", `{"question": "q", "answer": ["a"]}` + "\n", "squad", `unknown format "squad"`},
		{"empty.jsonl", "\n\n", "", "empty file"},
		{"not-object.jsonl", "[1, 2]\n", FormatNQ, "record 0 (line 1): nq record"},
		{"ircot-no-answer.txt", "# METADATA: {\"qid\": \"2hop__1_2\"}\nWikipedia Title: T\ntext\n\nQ: q?\n\n# METADATA: {\"qid\": \"2hop__3_4\"}\nQ: r?\nA: so. So the answer is: x.\n", "", "example at line 1: no \"A:\" line"},
		{"ircot-bad-meta.txt", "# METADATA: {\"qid\": \"2hop__1_2\"}\nQ: q?\nA: So the answer is: y.\n\n# METADATA: {qid}\n", "", "line 5: metadata"},
		{"ircot-no-final.txt", "# METADATA: {\"qid\": \"a\"}\nQ: q?\nA: I think it is y.\n", FormatIRCoT, "line 3: answer line without \"So the answer is:\""},
	}
	for _, c := range cases {
		path := write(t, c.name, c.body)
		_, err := Load(path, c.format)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to name the file and say %q", c.name, err, c.want)
		}
	}
}

func TestLoadBrokenParquet(t *testing.T) {
	// Row 1 has neither a question nor a user message.
	var ok, bad agentR1Row
	ok.Prompt = append(ok.Prompt, struct {
		Role    string `parquet:"role"`
		Content string `parquet:"content"`
	}{"user", "q"})
	path := filepath.Join(t.TempDir(), "bad.parquet")
	if err := parquet.WriteFile(path, []agentR1Row{ok, bad}); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, ""); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "row 1: verl record: no question") {
		t.Errorf("err = %v, want row 1 named", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	truncated := write(t, "truncated.parquet", string(data[:len(data)/2]))
	if _, err := Load(truncated, ""); err == nil || !strings.Contains(err.Error(), truncated) {
		t.Errorf("truncated parquet: err = %v, want it to name the file", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "absent.jsonl"), ""); err == nil || !strings.Contains(err.Error(), "absent.jsonl") {
		t.Errorf("absent file: err = %v", err)
	}
}
