// Package tasks loads question-answering datasets as []envs.Task: HotpotQA,
// 2WikiMultihopQA, MuSiQue, NQ-open, FlashRAG JSONL, the IRCoT few-shot
// prompt files and verl / Agent-R1 / Search-R1 Parquet files.
package tasks

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// The dataset layouts Load reads; pass one as Load's format, or "" to
// detect it from the file.
const (
	FormatHotpotQA = "hotpotqa"        // original list {_id, question, answer, type, level, supporting_facts, context}, or the HF layout {id, ..., supporting_facts: {title, sent_id}, context: {title, sentences}}
	FormatTwoWiki  = "2wikimultihopqa" // the HotpotQA layouts plus type and evidences, or {test_id, question, answer (string or list)}
	FormatMuSiQue  = "musique"         // JSONL {id, paragraphs, question, question_decomposition, answer, answer_aliases, answerable}
	FormatNQ       = "nq"              // NQ-open JSONL {question, answer: [...]}
	FormatFlashRAG = "flashrag"        // FlashRAG JSONL {id, question, golden_answers, metadata}
	FormatIRCoT    = "ircot"           // IRCoT prompt text: "# METADATA: {qid}", "Wikipedia Title:" paragraphs, "Q:", "A: ... So the answer is: X."
	FormatVerl     = "verl"            // verl-style records {data_source, prompt: [{role, content}], ability, reward_model: {style, ground_truth}, extra_info}, usually Parquet
)

// Formats lists the formats Load accepts.
var Formats = []string{FormatHotpotQA, FormatTwoWiki, FormatMuSiQue, FormatNQ, FormatFlashRAG, FormatIRCoT, FormatVerl}

// parser turns one raw JSON record of a format into a task. It leaves ID
// empty when the record has none.
type parser func(path string, raw []byte) (envs.Task, error)

var parsers = map[string]parser{
	FormatHotpotQA: parseHotpot,
	FormatTwoWiki:  parseTwoWiki,
	FormatMuSiQue:  parseMuSiQue,
	FormatNQ:       parseNQ,
	FormatFlashRAG: parseFlashRAG,
	FormatVerl:     parseVerl,
}

// Load reads the tasks of the dataset file at path in the given format
// (one of Formats), or detects the format when it is "". JSON arrays,
// JSONL and Parquet files are accepted for every record format; IRCoT is
// text. A record without an id gets its 0-based position in the file as
// ID. A malformed line or record, or an ID seen twice, is an error naming
// the file and line (or Parquet row).
func Load(path, format string) ([]envs.Task, error) {
	if format == FormatIRCoT || format == "" && isIRCoT(path) {
		ts, err := loadIRCoT(path)
		if err != nil {
			return nil, fmt.Errorf("load %s: %w", path, err)
		}
		return ts, nil
	}
	if format != "" && parsers[format] == nil {
		return nil, fmt.Errorf("load %s: unknown format %q (want one of %s)", path, format, strings.Join(Formats, ", "))
	}
	var ts []envs.Task
	seen := map[string]string{}
	err := eachRecord(path, func(r record) error {
		if format == "" {
			f, err := detect(r.raw)
			if err != nil {
				return fmt.Errorf("%s: %w", r.where, err)
			}
			format = f
		}
		t, err := parsers[format](path, r.raw)
		if err != nil {
			return fmt.Errorf("%s: %s record: %w", r.where, format, err)
		}
		if t.ID == "" {
			t.ID = fmt.Sprint(r.index)
		}
		if first, dup := seen[t.ID]; dup {
			return fmt.Errorf("%s: id %q already used at %s", r.where, t.ID, first)
		}
		seen[t.ID] = r.where
		ts = append(ts, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("load %s: no records", path)
	}
	return ts, nil
}

// detect names the format of a record from its keys.
func detect(raw []byte) (string, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return "", fmt.Errorf("want a JSON object: %w", err)
	}
	has := func(k string) bool { _, ok := keys[k]; return ok }
	switch {
	case has("prompt"):
		return FormatVerl, nil
	case has("paragraphs") || has("question_decomposition"):
		return FormatMuSiQue, nil
	case has("test_id") || has("evidences"):
		return FormatTwoWiki, nil
	case has("supporting_facts") || has("context"):
		// Both datasets have "comparison" questions; only HotpotQA has a
		// level, only 2Wiki the other types.
		var typ string
		if !has("level") && json.Unmarshal(keys["type"], &typ) == nil && twoWikiHops[typ] > 0 {
			return FormatTwoWiki, nil
		}
		return FormatHotpotQA, nil
	case has("golden_answers"):
		return FormatFlashRAG, nil
	case has("question") && has("answer"):
		return FormatNQ, nil
	}
	return "", fmt.Errorf("cannot tell the dataset layout from keys %q; pass a format (one of %s)",
		slices.Sorted(maps.Keys(keys)), strings.Join(Formats, ", "))
}

// isIRCoT reports whether the file starts like an IRCoT prompt file.
func isIRCoT(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && line == "" {
		return false
	}
	return strings.HasPrefix(line, ircotMeta)
}
