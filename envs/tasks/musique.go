package tasks

import (
	"encoding/json"
	"strconv"

	"github.com/agentrl/agentrl/envs"
)

// musiqueRecord is the MuSiQue layout (original JSONL and Hugging Face).
type musiqueRecord struct {
	ID            string          `json:"id"`
	Question      string          `json:"question"`
	Answer        json.RawMessage `json:"answer"`
	AnswerAliases json.RawMessage `json:"answer_aliases"`
	Answerable    *bool           `json:"answerable"`
	Paragraphs    []struct {
		Idx          int    `json:"idx"`
		Title        string `json:"title"`
		IsSupporting bool   `json:"is_supporting"`
	} `json:"paragraphs"`
	Decomposition []struct {
		SupportIdx *int `json:"paragraph_support_idx"`
	} `json:"question_decomposition"`
}

// parseMuSiQue reads a MuSiQue record. Answers are the answer then its
// aliases; Support is the titles of the supporting paragraphs in the order
// of the question decomposition (paragraph order when the decomposition
// does not point at them); Hops comes from the id ("3hop1__...") or, failing
// that, the number of decomposition steps; Meta keeps answerable.
func parseMuSiQue(_ string, raw []byte) (envs.Task, error) {
	var r musiqueRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return envs.Task{}, err
	}
	t := envs.Task{ID: r.ID, Dataset: FormatMuSiQue, Question: r.Question, Hops: hops(FormatMuSiQue, r.ID, "")}
	if t.Hops == 0 {
		t.Hops = len(r.Decomposition)
	}
	var err error
	if t.Answers, err = answers(r.Answer, r.AnswerAliases); err != nil {
		return t, err
	}
	title := map[int]string{}
	for _, p := range r.Paragraphs {
		title[p.Idx] = p.Title
	}
	for _, d := range r.Decomposition {
		if d.SupportIdx == nil || title[*d.SupportIdx] == "" {
			t.Support = nil
			break
		}
		if s := title[*d.SupportIdx]; !contains(t.Support, s) {
			t.Support = append(t.Support, s)
		}
	}
	if t.Support == nil {
		for _, p := range r.Paragraphs {
			if p.IsSupporting && !contains(t.Support, p.Title) {
				t.Support = append(t.Support, p.Title)
			}
		}
	}
	if r.Answerable != nil {
		setMeta(&t, "answerable", strconv.FormatBool(*r.Answerable))
	}
	// An unanswerable MuSiQue question has no answer by design.
	return finish(t, r.Answerable == nil || *r.Answerable)
}
