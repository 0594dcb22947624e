package tasks

import (
	"encoding/json"

	"github.com/agentrl/agentrl/envs"
)

// hotpotRecord is the HotpotQA layout, original or Hugging Face, which
// 2WikiMultihopQA shares. context is not kept: the tasks retrieve from a
// corpus.
type hotpotRecord struct {
	OrigID          json.RawMessage `json:"_id"`
	ID              json.RawMessage `json:"id"`
	Question        string          `json:"question"`
	Answer          json.RawMessage `json:"answer"`
	Type            string          `json:"type"`
	Level           string          `json:"level"`
	SupportingFacts json.RawMessage `json:"supporting_facts"`
}

func parseHotpot(_ string, raw []byte) (envs.Task, error) {
	return parseHotpotLayout(raw, FormatHotpotQA)
}

// parseHotpotLayout reads a HotpotQA-layout record of dataset. Support is
// the distinct titles of supporting_facts in order; Meta keeps type and
// level.
func parseHotpotLayout(raw []byte, dataset string) (envs.Task, error) {
	var r hotpotRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return envs.Task{}, err
	}
	id, err := idString(r.OrigID)
	if err == nil && id == "" {
		id, err = idString(r.ID)
	}
	if err != nil {
		return envs.Task{}, err
	}
	t := envs.Task{ID: id, Dataset: dataset, Question: r.Question, Hops: hops(dataset, id, r.Type)}
	if t.Answers, err = answers(r.Answer); err != nil {
		return t, err
	}
	if t.Support, err = supportTitles(r.SupportingFacts); err != nil {
		return t, err
	}
	setMeta(&t, "type", r.Type, "level", r.Level)
	return finish(t, true)
}
