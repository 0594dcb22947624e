package tasks

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// parseNQ reads an NQ-open record {question, answer: [...]} (an "id", when
// present, is kept).
func parseNQ(_ string, raw []byte) (envs.Task, error) {
	var r struct {
		ID       json.RawMessage `json:"id"`
		Question string          `json:"question"`
		Answer   json.RawMessage `json:"answer"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return envs.Task{}, err
	}
	id, err := idString(r.ID)
	if err != nil {
		return envs.Task{}, err
	}
	t := envs.Task{ID: id, Dataset: FormatNQ, Question: r.Question}
	if t.Answers, err = answers(r.Answer); err != nil {
		return t, err
	}
	return finish(t, true)
}

// parseFlashRAG reads a FlashRAG record {id, question, golden_answers,
// metadata}. FlashRAG keeps each dataset in its own folder
// (<dataset>/<split>.jsonl), so the dataset name is the file's folder,
// lowercased. From metadata, supporting_facts become Support and type and
// level go to Meta; hops are set as for the dataset's own layout.
func parseFlashRAG(path string, raw []byte) (envs.Task, error) {
	var r struct {
		ID            json.RawMessage `json:"id"`
		Question      string          `json:"question"`
		GoldenAnswers json.RawMessage `json:"golden_answers"`
		Metadata      struct {
			Type            string          `json:"type"`
			Level           string          `json:"level"`
			SupportingFacts json.RawMessage `json:"supporting_facts"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return envs.Task{}, err
	}
	id, err := idString(r.ID)
	if err != nil {
		return envs.Task{}, err
	}
	dataset := strings.ToLower(filepath.Base(filepath.Dir(path)))
	t := envs.Task{ID: id, Dataset: dataset, Question: r.Question, Hops: hops(dataset, id, r.Metadata.Type)}
	if t.Answers, err = answers(r.GoldenAnswers); err != nil {
		return t, err
	}
	if t.Support, err = supportTitles(r.Metadata.SupportingFacts); err != nil {
		return t, err
	}
	setMeta(&t, "type", r.Metadata.Type, "level", r.Metadata.Level)
	return finish(t, true)
}
