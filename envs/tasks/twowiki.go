package tasks

import (
	"encoding/json"

	"github.com/agentrl/agentrl/envs"
)

// parseTwoWiki reads a 2WikiMultihopQA record: the original / Hugging Face
// layout (the HotpotQA one, whose type gives the hops), or the question-only
// {test_id, question, answer} layout, where answer is a string or a list of
// aliases (gold first) and the hops are unknown.
func parseTwoWiki(_ string, raw []byte) (envs.Task, error) {
	var probe struct {
		TestID json.RawMessage `json:"test_id"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return envs.Task{}, err
	}
	if probe.TestID == nil {
		return parseHotpotLayout(raw, FormatTwoWiki)
	}
	var r struct {
		Question string          `json:"question"`
		Answer   json.RawMessage `json:"answer"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return envs.Task{}, err
	}
	id, err := idString(probe.TestID)
	if err != nil {
		return envs.Task{}, err
	}
	t := envs.Task{ID: id, Dataset: FormatTwoWiki, Question: r.Question}
	if t.Answers, err = answers(r.Answer); err != nil {
		return t, err
	}
	return finish(t, true)
}
