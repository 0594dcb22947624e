package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// answers collects answer strings from raw JSON values that are each
// absent, a string, a number, a list of those, or an object with a
// "target" (Search-R1's ground truth). Answers are trimmed, empty ones
// dropped and repeats removed, keeping the first order.
func answers(raws ...json.RawMessage) ([]string, error) {
	var out []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if s != "" && !contains(out, s) {
			out = append(out, s)
		}
	}
	var walk func(raw json.RawMessage) error
	walk = func(raw json.RawMessage) error {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || string(raw) == "null" {
			return nil
		}
		switch raw[0] {
		case '"':
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return err
			}
			add(s)
		case '[':
			var list []json.RawMessage
			if err := json.Unmarshal(raw, &list); err != nil {
				return err
			}
			for _, e := range list {
				if err := walk(e); err != nil {
					return err
				}
			}
		case '{':
			var obj struct {
				Target json.RawMessage `json:"target"`
			}
			if err := json.Unmarshal(raw, &obj); err != nil {
				return err
			}
			if obj.Target == nil {
				return fmt.Errorf("answer object %s has no target", raw)
			}
			return walk(obj.Target)
		default:
			var n json.Number
			if err := json.Unmarshal(raw, &n); err != nil {
				return fmt.Errorf("answer %s: want a string, number, list or {target}", raw)
			}
			add(n.String())
		}
		return nil
	}
	for _, raw := range raws {
		if err := walk(raw); err != nil {
			return nil, fmt.Errorf("answer: %w", err)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// supportTitles returns the distinct titles of supporting facts given as
// [[title, sentence], ...] (original HotpotQA / 2Wiki), {"title": [...],
// "sent_id": [...]} (Hugging Face), or either of those inside a JSON string
// (Agent-R1's extra_info).
func supportTitles(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var titles []string
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return supportTitles(json.RawMessage(s))
	case '{':
		var hf struct {
			Title []string `json:"title"`
		}
		if err := json.Unmarshal(raw, &hf); err != nil {
			return nil, fmt.Errorf("supporting_facts: %w", err)
		}
		titles = hf.Title
	case '[':
		var facts [][]json.RawMessage
		if err := json.Unmarshal(raw, &facts); err != nil {
			return nil, fmt.Errorf("supporting_facts: %w", err)
		}
		for i, f := range facts {
			var title string
			if len(f) == 0 || json.Unmarshal(f[0], &title) != nil {
				return nil, fmt.Errorf("supporting_facts[%d]: want [title, sentence index]", i)
			}
			titles = append(titles, title)
		}
	default:
		return nil, fmt.Errorf("supporting_facts: want a list or an object, got %.40s", raw)
	}
	var out []string
	for _, t := range titles {
		if t = strings.TrimSpace(t); t != "" && !contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

// idString reads an id given as a JSON string or number; "" when absent.
func idString(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", fmt.Errorf("id %s: want a string or a number", raw)
	}
	return n.String(), nil
}

// twoWikiHops is the number of supporting paragraphs of each
// 2WikiMultihopQA question type: a comparison reads the two compared
// entities, inference and compositional questions chain two paragraphs,
// and bridge_comparison chains two for each of the two compared entities.
var twoWikiHops = map[string]int{"comparison": 2, "inference": 2, "compositional": 2, "bridge_comparison": 4}

// musiqueHops reads the hop count from a MuSiQue id ("2hop__...",
// "3hop1__...", "4hop3__...").
var musiqueHops = regexp.MustCompile(`^([1-9])hop`)

// hops is the number of reasoning hops of a question of dataset, from what
// is known about it: HotpotQA questions all need two paragraphs, MuSiQue
// says so in the id, 2Wiki in the type. 0 when unknown.
func hops(dataset, id, typ string) int {
	switch dataset {
	case FormatHotpotQA:
		return 2
	case FormatMuSiQue:
		if m := musiqueHops.FindStringSubmatch(id); m != nil {
			return int(m[1][0] - '0')
		}
	case FormatTwoWiki:
		return twoWikiHops[typ]
	}
	return 0
}

var errNoQuestion = errors.New("no question")

// finish trims the question and checks that the task has one and, when
// needAnswer, an answer.
func finish(t envs.Task, needAnswer bool) (envs.Task, error) {
	t.Question = strings.TrimSpace(t.Question)
	if t.Question == "" {
		return t, errNoQuestion
	}
	if needAnswer && len(t.Answers) == 0 {
		return t, errors.New("no answer")
	}
	return t, nil
}

// setMeta stores the non-empty values of kv (key, value, key, value, ...).
func setMeta(t *envs.Task, kv ...string) {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			continue
		}
		if t.Meta == nil {
			t.Meta = map[string]string{}
		}
		t.Meta[kv[i]] = kv[i+1]
	}
}
