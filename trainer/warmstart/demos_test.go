package warmstart

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/synth"
	"github.com/agentrl/agentrl/envs/tools/search"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/toolcall"
	"github.com/agentrl/agentrl/trainer/agent"
	"github.com/agentrl/agentrl/trainer/config"
)

// demoWorld is the default job's world (80 entities, 400 questions of 1-3
// hops, a quarter held out, 60 out-of-domain questions) with the search
// tool over its passages, returning 2 passages as the default config does.
func demoWorld(t *testing.T) (*synth.World, []envs.Tool) {
	t.Helper()
	w, err := synth.Generate(synth.Config{Seed: 7, Entities: 80, Questions: 400, MaxHops: 3, TestFraction: 0.25, OODQuestions: 60})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "index.db")
	if err := search.BuildIndex(context.Background(), path, w.Passages, nil); err != nil {
		t.Fatal(err)
	}
	idx, err := search.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	return w, []envs.Tool{search.NewSearchTool(idx, 2)}
}

// lowerWords splits text into lowercase words of letters.
func lowerWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) })
}

// searchQueries are the queries of a demonstration's search calls and the
// tool responses that follow each.
func searchQueries(t *testing.T, msgs []tokenizer.Message) (queries, responses []string) {
	t.Helper()
	for i, m := range msgs {
		for _, c := range m.ToolCalls {
			var a struct{ Query string }
			if c.Name != search.SearchName || json.Unmarshal(c.Arguments, &a) != nil || i+1 >= len(msgs) || msgs[i+1].Role != "tool" {
				t.Fatalf("malformed call %+v in %+v", c, msgs)
			}
			queries, responses = append(queries, a.Query), append(responses, msgs[i+1].Content)
		}
	}
	return queries, responses
}

// heldOutPhrases word the out-of-domain split's held-out compositions as
// questions do: born_in then located_in, works_for then based_in.
var heldOutPhrases = []string{"nation of the birthplace of", "headquarters of the employer of"}

// generalDemoSet renders n demonstrations of the warm start named
// (general, calls or follow) of demoWorld's training questions, and those
// questions by text.
func generalDemoSet(t *testing.T, n int, warmStart string) (map[string]envs.Task, [][]tokenizer.Message) {
	t.Helper()
	w, tools := demoWorld(t)
	train := map[string]envs.Task{}
	for _, task := range w.Train {
		train[task.Question] = task
	}
	demos, err := generalDemos(context.Background(), w, w.Train, tools, n, warmStart, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return train, demos
}

// The general warm start (sft.warm_start general) teaches reading and the
// tool-call format, and never a multi-hop search: 200 demonstrations
// alternate reading (100) and searching (100); of every four search
// demonstrations one is a retry, so 25 have two searches and 75 one.
func TestGeneralDemosTeachReadingAndSingleSearchesOnly(t *testing.T) {
	train, demos := generalDemoSet(t, 200, "general")
	reading, searching, retries := 0, 0, 0
	readHops := map[int]int{}
	for i, msgs := range demos {
		q := msgs[1].Content
		if msgs[0].Content == toolcall.RAGSystemPrompt {
			q, _, _ = strings.Cut(strings.TrimPrefix(q, "Question: "), "\nPassages:\n")
		}
		task, ok := train[q]
		if !ok {
			t.Fatalf("demo %d: question %q is not a training question", i, q)
		}
		for _, p := range heldOutPhrases {
			if strings.Contains(q, p) {
				t.Errorf("demo %d: question %q has a held-out composition", i, q)
			}
		}
		last := msgs[len(msgs)-1]
		if last.Role != "assistant" || last.Content != toolcall.Answer(task.Answers[0]) || len(last.ToolCalls) != 0 {
			t.Errorf("demo %d ends with %+v, want the answer %q", i, last, task.Answers[0])
		}
		switch msgs[0].Content {
		case toolcall.RAGSystemPrompt: // reading: the naive-RAG prompt, answered at once
			reading++
			readHops[task.Hops]++
			user := msgs[1].Content
			if len(msgs) != 3 || !strings.HasPrefix(user, "Question: "+task.Question+"\nPassages:\nDoc 1 (Title: ") || !strings.Contains(user, task.Answers[0]) {
				t.Errorf("reading demo %d: %+v", i, msgs)
			}
			for _, title := range task.Support {
				if !strings.Contains(user, "(Title: "+title+")") {
					t.Errorf("reading demo %d lacks the supporting passage %q", i, title)
				}
			}
		case toolcall.SystemPrompt: // the tool-call format on a 1-hop question
			searching++
			if task.Hops != 1 {
				t.Errorf("search demo %d is of a %d-hop question", i, task.Hops)
			}
			queries, responses := searchQueries(t, msgs)
			if len(queries) == 0 || len(queries) > 2 || len(msgs) != 3+2*len(queries) {
				t.Fatalf("search demo %d: %d searches in %d messages", i, len(queries), len(msgs))
			}
			// No query comes from a tool response: every word of every
			// query is a word of the question (names revealed by a search
			// result never are).
			qw := map[string]bool{}
			for _, x := range lowerWords(task.Question) {
				qw[x] = true
			}
			for _, query := range queries {
				for _, x := range lowerWords(query) {
					if !qw[x] {
						t.Errorf("search demo %d: query %q has %q, not a word of the question %q", i, query, x, task.Question)
					}
				}
			}
			if len(queries) == 2 {
				retries++
				if responses[0] != "No results." || queries[1] != task.Support[0] {
					t.Errorf("search demo %d: two searches that are not a retry after no results: %q -> %q", i, queries, responses)
				}
			}
			if !strings.Contains(responses[len(responses)-1], task.Answers[0]) {
				t.Errorf("search demo %d answers %q, which its last search did not return", i, task.Answers[0])
			}
		default:
			t.Fatalf("demo %d: system prompt %q", i, msgs[0].Content)
		}
	}
	if reading != 100 || searching != 100 || retries != 25 {
		t.Errorf("%d reading, %d search demos (%d retries), want 100, 100 (25)", reading, searching, retries)
	}
	if readHops[1] == 0 || readHops[2] == 0 || readHops[3] == 0 {
		t.Errorf("reading demos by hop count %v, want every training hop count", readHops)
	}
}

// The calls warm start (sft.warm_start calls) adds well-formed calls on
// every kind of question and still shows no chain: of 240 demonstrations
// 120 read; of the 120 that search, 20 each search a 1-hop question's
// text, its name, or retry; 20 confirm a 1-hop answer by searching for the
// name the first result gave, and answer that name; 40 are a multi-hop
// question's first search of its text, ending at the call.
func TestCallsDemosShowFirstCallsAndNoChain(t *testing.T) {
	train, demos := generalDemoSet(t, 240, "calls")
	kinds := map[string]int{}
	firstHops := map[int]int{}
	for i, msgs := range demos {
		if msgs[0].Content == toolcall.RAGSystemPrompt {
			kinds["reading"]++
			continue
		}
		task, ok := train[msgs[1].Content]
		if !ok {
			t.Fatalf("demo %d: question %q is not a training question", i, msgs[1].Content)
		}
		last := msgs[len(msgs)-1]
		if task.Hops > 1 { // a first search, ending at the call
			var a struct{ Query string }
			if len(msgs) != 3 || last.Role != "assistant" || len(last.ToolCalls) != 1 || json.Unmarshal(last.ToolCalls[0].Arguments, &a) != nil || a.Query != task.Question {
				t.Fatalf("demo %d of a %d-hop question is not its first search alone: %+v", i, task.Hops, msgs)
			}
			kinds["first"]++
			firstHops[task.Hops]++
			continue
		}
		if last.Content != toolcall.Answer(task.Answers[0]) {
			t.Errorf("search demo %d ends with %+v, want the answer %q", i, last, task.Answers[0])
		}
		queries, responses := searchQueries(t, msgs)
		switch {
		case len(queries) == 1:
			kinds["one search"]++
		case responses[0] == "No results.":
			kinds["retry"]++
		case queries[1] == task.Answers[0] && strings.Contains(responses[0], task.Answers[0]) && !strings.Contains(task.Question, task.Answers[0]):
			kinds["confirm"]++
		default:
			t.Errorf("search demo %d: searches %q -> %q are neither a retry nor a confirmation", i, queries, responses)
		}
	}
	want := map[string]int{"reading": 120, "one search": 40, "retry": 20, "confirm": 20, "first": 40}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%d %s demonstrations, want %d (all: %v)", kinds[k], k, n, kinds)
		}
	}
	if firstHops[2] == 0 || firstHops[3] == 0 {
		t.Errorf("first searches by hop count %v, want 2- and 3-hop questions", firstHops)
	}
}

// The follow warm start (sft.warm_start follow) is the calls warm start
// demonstration for demonstration, except that each confirmation becomes
// a search for the same question's text, then for the name it mentions,
// answered with what the second result says: never the name searched, and
// still no query from a tool response.
func TestFollowDemosReadTheSecondResult(t *testing.T) {
	_, calls := generalDemoSet(t, 240, "calls")
	train, follow := generalDemoSet(t, 240, "follow")
	if len(calls) != len(follow) {
		t.Fatalf("%d follow demonstrations, %d calls ones", len(follow), len(calls))
	}
	followed := 0
	for i := range calls {
		if reflect.DeepEqual(calls[i], follow[i]) {
			continue
		}
		task := train[follow[i][1].Content]
		cq, _ := searchQueries(t, calls[i])
		queries, responses := searchQueries(t, follow[i])
		if calls[i][1].Content != follow[i][1].Content || len(cq) != 2 || cq[1] != task.Answers[0] {
			t.Fatalf("demo %d differs from calls' and is not in place of a confirmation: %+v", i, follow[i])
		}
		last := follow[i][len(follow[i])-1]
		if len(queries) != 2 || queries[0] != task.Question || queries[1] != task.Support[0] ||
			!strings.Contains(responses[1], task.Answers[0]) || last.Content != toolcall.Answer(task.Answers[0]) || task.Answers[0] == queries[1] {
			t.Errorf("demo %d: searches %q -> %q answered %q, want the question's text, then its name, answered off the second result", i, queries, responses, last.Content)
		}
		followed++
	}
	if followed != 20 {
		t.Errorf("%d demonstrations follow a name, want the 20 confirmations replaced", followed)
	}
}

// The check above would catch the multi-hop strategy: the expert setting's
// demonstrations (sft.warm_start expert) search for names that only a
// previous tool response gave.
func TestExpertDemosChainSearches(t *testing.T) {
	ctx := context.Background()
	w, tools := demoWorld(t)
	demos, err := scriptedDemos(ctx, w, w.Train, tools, 60, 0, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	chained := 0
	for _, msgs := range demos {
		queries, responses := searchQueries(t, msgs)
		for k := 1; k < len(queries); k++ {
			if !strings.Contains(msgs[1].Content, queries[k]) && strings.Contains(responses[k-1], queries[k]) {
				chained++
			}
		}
	}
	if chained == 0 {
		t.Fatal("no expert demonstration searches for a name a previous result gave")
	}
}

// A search demonstration of a multi-hop question is refused.
func TestSearchDemonstrationWantsOneHop(t *testing.T) {
	w, tools := demoWorld(t)
	for _, task := range w.Train {
		if task.Hops == 2 {
			if _, err := agent.SearchDemonstration(context.Background(), task, tools, agent.QueryName); err == nil || !strings.Contains(err.Error(), "1-hop") {
				t.Fatalf("2-hop task: err = %v, want a 1-hop error", err)
			}
			return
		}
	}
	t.Fatal("no 2-hop training question")
}

// The default config asks for the calls warm start and out-of-domain
// questions; the expert setting is reachable.
func TestWarmStartSetting(t *testing.T) {
	cfg := config.Default()
	if cfg.SFT.WarmStart != "calls" || cfg.Data.Synthetic.OODQuestions != 100 {
		t.Fatalf("default sft.warm_start %q, ood_questions %d", cfg.SFT.WarmStart, cfg.Data.Synthetic.OODQuestions)
	}
	if err := cfg.Set("sft.warm_start=expert"); err != nil || cfg.Validate() != nil {
		t.Fatalf("expert setting: %v / %v", err, cfg.Validate())
	}
	if err := cfg.Set("sft.warm_start=oracle"); err == nil && cfg.Validate() == nil {
		t.Fatal("sft.warm_start oracle accepted")
	}
}

// A demonstration with a piece the word-level tokenizer lacks is refused,
// naming the text before it, instead of teaching the model to write
// <unk>.
func TestRenderDemosRefusesUnknownPieces(t *testing.T) {
	ok := []tokenizer.Message{{Role: "user", Content: "Where is Voza?"}, {Role: "assistant", Content: "In Lund."}}
	boot, err := tokenizer.BuildWordLevel(nil, toolcall.SpecialTokens())
	if err != nil {
		t.Fatal(err)
	}
	bf, err := tokenizer.NewChatFormat(boot)
	if err != nil {
		t.Fatal(err)
	}
	text, err := bf.RenderText(ok, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.BuildWordLevel([]string{text}, toolcall.SpecialTokens())
	if err != nil {
		t.Fatal(err)
	}
	cf, err := tokenizer.NewChatFormat(tok)
	if err != nil {
		t.Fatal(err)
	}
	if seqs, _, err := renderDemos(cf, [][]tokenizer.Message{ok}, nil, 0); err != nil || len(seqs) != 1 {
		t.Fatalf("a demonstration of known pieces: %d sequences, %v", len(seqs), err)
	}
	bad := []tokenizer.Message{{Role: "user", Content: "Where is Voza?"}, {Role: "assistant", Content: "In Lund!"}}
	_, _, err = renderDemos(cf, [][]tokenizer.Message{ok, bad}, nil, 0)
	if err == nil || !strings.Contains(err.Error(), `demonstration 2: the text after "`) || !strings.Contains(err.Error(), `Lund" is not in the tokenizer's vocabulary`) {
		t.Errorf("unknown piece: %v", err)
	}
}
