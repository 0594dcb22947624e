package tasks

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// verlRecord is the verl dataset layout (Agent-R1, Search-R1 and verl's own
// examples write it to Parquet): the chat prompt, the reward model's ground
// truth and free-form extra_info. Search-R1 keeps its source columns (id,
// question, golden_answers) beside them.
type verlRecord struct {
	DataSource string `json:"data_source"`
	Prompt     []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"prompt"`
	Ability     string `json:"ability"`
	RewardModel struct {
		Style       string          `json:"style"`
		GroundTruth json.RawMessage `json:"ground_truth"`
	} `json:"reward_model"`
	ExtraInfo     map[string]json.RawMessage `json:"extra_info"`
	ID            json.RawMessage            `json:"id"`
	Question      *string                    `json:"question"`
	GoldenAnswers json.RawMessage            `json:"golden_answers"`
}

// parseVerl reads a verl record.
//
//   - Question: the "question" column, else extra_info.question, else the
//     content of the last user message of the prompt.
//   - Answers: reward_model.ground_truth (a string, a list, or {target}),
//     else golden_answers; a record may have none (some verl tasks are
//     scored by a function, not a reference answer).
//   - ID: the "id" column, else extra_info split and index ("train-12"),
//     else the record's position.
//   - Dataset: data_source, with HotpotQA, 2Wiki, MuSiQue and NQ sources
//     named as this package names them; "verl" when absent.
//   - Support from extra_info.supporting_facts (Agent-R1 stores it as a
//     JSON string), hops as for the dataset.
//   - Meta: data_source, ability, split, type, level, reward_style, and the
//     whole prompt as JSON under "prompt" so a trainer can reuse it.
func parseVerl(_ string, raw []byte) (envs.Task, error) {
	var r verlRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return envs.Task{}, err
	}
	extra := func(k string) (string, error) {
		v, ok := r.ExtraInfo[k]
		if !ok {
			return "", nil
		}
		s, err := idString(v)
		if err != nil {
			return "", fmt.Errorf("extra_info.%s: %w", k, err)
		}
		return s, nil
	}
	var fields [5]string
	for i, k := range []string{"question", "split", "index", "type", "level"} {
		s, err := extra(k)
		if err != nil {
			return envs.Task{}, err
		}
		fields[i] = s
	}
	question, split, index, typ, level := fields[0], fields[1], fields[2], fields[3], fields[4]

	t := envs.Task{Dataset: canonicalDataset(r.DataSource)}
	switch {
	case r.Question != nil:
		t.Question = *r.Question
	case question != "":
		t.Question = question
	default:
		for _, m := range r.Prompt {
			if m.Role == "user" {
				t.Question = m.Content
			}
		}
	}
	var err error
	if t.ID, err = idString(r.ID); err != nil {
		return t, err
	}
	if t.ID == "" && index != "" {
		t.ID = strings.TrimPrefix(split+"-"+index, "-")
	}
	if t.Answers, err = answers(r.RewardModel.GroundTruth); err != nil {
		return t, err
	}
	if len(t.Answers) == 0 {
		if t.Answers, err = answers(r.GoldenAnswers); err != nil {
			return t, err
		}
	}
	if t.Support, err = supportTitles(r.ExtraInfo["supporting_facts"]); err != nil {
		return t, fmt.Errorf("extra_info.%w", err)
	}
	t.Hops = hops(t.Dataset, t.ID, typ)
	prompt, err := json.Marshal(r.Prompt)
	if err != nil {
		return t, err
	}
	setMeta(&t, "data_source", r.DataSource, "ability", r.Ability, "split", split, "type", typ, "level", level,
		"reward_style", r.RewardModel.Style, "prompt", string(prompt))
	return finish(t, false)
}

// canonicalDataset maps a verl data_source to this package's dataset names
// where it is one of them ("hotpotqa/hotpot_qa" -> "hotpotqa").
func canonicalDataset(source string) string {
	s := strings.ToLower(source)
	switch {
	case s == "":
		return FormatVerl
	case strings.Contains(s, "hotpot"):
		return FormatHotpotQA
	case strings.Contains(s, "2wiki"):
		return FormatTwoWiki
	case strings.Contains(s, "musique"):
		return FormatMuSiQue
	case s == "nq" || strings.HasPrefix(s, "nq_") || strings.HasPrefix(s, "nq-") || strings.Contains(s, "natural_questions"):
		return FormatNQ
	}
	return source
}
