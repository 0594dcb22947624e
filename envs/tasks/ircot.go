package tasks

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/agentrl/agentrl/envs"
)

// IRCoT's few-shot prompt files (StonyBrookNLP/ircot, copied by HippoRAG as
// gold_with_3_distractors_context_cot_qa_codex.txt) hold real questions of
// HotpotQA, 2WikiMultihopQA and MuSiQue, each with its gold paragraphs
// mixed with three distractors (which is which is not marked), a
// chain-of-thought answer and the final answer. One example:
//
//	# METADATA: {"qid": "2hop__292995_8796"}
//	Wikipedia Title: <title>
//	<paragraph>
//	(blank line, more paragraphs)
//	Q: <question>
//	A: <reasoning>. So the answer is: <answer>.
const (
	ircotMeta   = "# METADATA:"
	ircotTitle  = "Wikipedia Title:"
	ircotQ      = "Q:"
	ircotA      = "A:"
	ircotAnswer = "So the answer is:"
)

var (
	hotpotID  = regexp.MustCompile(`^[0-9a-f]{24}$`)
	twoWikiID = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// ircotDataset tells the dataset from the shape of a qid: MuSiQue ids start
// with the hop count, HotpotQA ids are 24 hex digits, 2Wiki ids 32.
func ircotDataset(qid string) string {
	switch {
	case musiqueHops.MatchString(qid):
		return FormatMuSiQue
	case hotpotID.MatchString(qid):
		return FormatHotpotQA
	case twoWikiID.MatchString(qid):
		return FormatTwoWiki
	}
	return FormatIRCoT
}

// ircotExample is an example being read, with the line it started on.
type ircotExample struct {
	line     int
	task     envs.Task
	titles   []string
	answered bool
}

// loadIRCoT reads an IRCoT prompt file. Each example becomes a task with
// the qid as ID, the dataset told by the qid, the final answer (one
// trailing period removed) as the only answer, and Meta "cot" (the
// reasoning) and "context_titles" (a JSON list of the paragraph titles
// shown with it, gold and distractors). Support stays empty because the
// file does not mark the gold paragraphs.
func loadIRCoT(path string) ([]envs.Task, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ts []envs.Task
	var cur *ircotExample
	done := func() error {
		if cur == nil {
			return nil
		}
		t, err := cur.finish()
		if err != nil {
			return fmt.Errorf("example at line %d: %w", cur.line, err)
		}
		ts = append(ts, t)
		return nil
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, ircotMeta):
			if err := done(); err != nil {
				return nil, err
			}
			var meta struct {
				QID string `json:"qid"`
			}
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, ircotMeta)), &meta); err != nil || meta.QID == "" {
				return nil, fmt.Errorf("line %d: metadata: want {\"qid\": ...} (%v)", n, err)
			}
			cur = &ircotExample{line: n, task: envs.Task{ID: meta.QID, Dataset: ircotDataset(meta.QID)}}
		case cur == nil:
			if strings.TrimSpace(line) != "" {
				return nil, fmt.Errorf("line %d: text before the first %q line", n, ircotMeta)
			}
		case strings.HasPrefix(line, ircotTitle):
			cur.titles = append(cur.titles, strings.TrimSpace(strings.TrimPrefix(line, ircotTitle)))
		case strings.HasPrefix(line, ircotQ):
			cur.task.Question = strings.TrimSpace(strings.TrimPrefix(line, ircotQ))
		case strings.HasPrefix(line, ircotA):
			if err := cur.answer(strings.TrimSpace(strings.TrimPrefix(line, ircotA))); err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := done(); err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, fmt.Errorf("no %q examples", ircotMeta)
	}
	return ts, nil
}

// answer splits an "A:" line into the reasoning and the final answer.
func (e *ircotExample) answer(a string) error {
	i := strings.LastIndex(a, ircotAnswer)
	if i < 0 {
		return fmt.Errorf("answer line without %q", ircotAnswer)
	}
	final := strings.TrimSuffix(strings.TrimSpace(a[i+len(ircotAnswer):]), ".")
	if final == "" {
		return fmt.Errorf("empty answer after %q", ircotAnswer)
	}
	e.task.Answers = []string{strings.TrimSpace(final)}
	setMeta(&e.task, "cot", strings.TrimSpace(a[:i]))
	e.answered = true
	return nil
}

func (e *ircotExample) finish() (envs.Task, error) {
	if !e.answered {
		return envs.Task{}, fmt.Errorf("no %q line", ircotA)
	}
	titles, err := json.Marshal(e.titles)
	if err != nil {
		return envs.Task{}, err
	}
	setMeta(&e.task, "context_titles", string(titles))
	e.task.Hops = hops(e.task.Dataset, e.task.ID, "")
	return finish(e.task, true)
}
