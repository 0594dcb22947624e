package synth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrl/agentrl/envs"
	"github.com/agentrl/agentrl/envs/tools/search"
)

func generate(t testing.TB, cfg Config) *World {
	t.Helper()
	w, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func allTasks(w *World) []envs.Task {
	return append(append(append(append([]envs.Task{}, w.Train...), w.Val...), w.Test...), w.OOD...)
}

func TestGenerateIsDeterministic(t *testing.T) {
	cfg := DefaultConfig()
	a, b := generate(t, cfg), generate(t, cfg)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two worlds from the same config differ")
	}
	cfg.Seed = 2
	if c := generate(t, cfg); reflect.DeepEqual(a.Passages, c.Passages) || reflect.DeepEqual(a.Train, c.Train) {
		t.Fatal("seeds 1 and 2 gave the same world")
	}
}

// richConfig is make paper's world: the rich schema, 140 entities, 1,000
// in-domain test questions, 600 training ones and 500 out of domain.
func richConfig() Config {
	return Config{Seed: 7, Relations: "rich", Entities: 140, Questions: 1600, MaxHops: 3, TestFraction: 0.625, OODQuestions: 500}
}

// TestBasicWorldsAreUnchanged: the rich schema draws after everything a
// basic world draws, so the default and the default job's worlds are the
// ones every earlier result was measured on (fingerprints taken before the
// rich schema existed).
func TestBasicWorldsAreUnchanged(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{DefaultConfig(), "f034ed93eebe4b9ac8f4d5b933e7af0ee984088ca333185de7a540b243530d84"},
		{Config{Seed: 7, Entities: 80, Questions: 400, MaxHops: 3, TestFraction: 0.25, OODQuestions: 140}, "9dee1db28edd17d4716a4e8d4a635cfedf9a23bb23ac6f9f694b6007d2eece55"},
	} {
		for _, name := range []string{"", "basic"} {
			cfg := c.cfg
			cfg.Relations = name
			w := generate(t, cfg)
			if got := fmt.Sprintf("%x", sha256.Sum256([]byte(fmt.Sprint(w.Entities, w.Passages, w.Train, w.Val, w.Test, w.OOD)))); got != c.want {
				t.Errorf("world %+v: fingerprint %s, want %s", cfg, got, c.want)
			}
		}
	}
}

func TestEntitiesAndLinks(t *testing.T) {
	for _, c := range []struct {
		cfg              Config
		schema           *schema
		minSent, maxSent int
	}{{DefaultConfig(), &basic, 2, 3}, {richConfig(), &rich, 4, 5}} {
		entitiesAndLinks(t, generate(t, c.cfg), c.schema, c.minSent, c.maxSent)
	}
}

// entitiesAndLinks checks that every entity has each of its kind's
// relations, to an entity of the right kind and never itself, and that
// passages have minSent to maxSent sentences.
func entitiesAndLinks(t *testing.T, w *World, s *schema, minSent, maxSent int) {
	t.Helper()
	if w.schema != s {
		t.Fatalf("world of %q has the wrong schema", w.Config.Relations)
	}
	// 200 entities: 200/10 = 20 countries, 200/4 = 50 cities,
	// 200*15/100 = 30 companies, 100 people.
	kinds := map[Kind]int{}
	byName := map[string]Entity{}
	for _, e := range w.Entities {
		kinds[e.Kind]++
		byName[e.Name] = e
	}
	counts := w.Config.kindCounts()
	if !reflect.DeepEqual(kinds, counts) {
		t.Fatalf("kinds = %v, want %v", kinds, counts)
	}
	if len(byName) != len(w.Entities) || len(w.Passages) != len(w.Entities) {
		t.Fatalf("%d distinct names, %d passages for %d entities", len(byName), len(w.Passages), len(w.Entities))
	}
	for _, e := range w.Entities {
		n := 0
		for _, r := range s.relations {
			if r.from != e.Kind {
				continue
			}
			n++
			if o, ok := byName[e.Links[r.name]]; !ok || o.Kind != r.to || o.Name == e.Name {
				t.Errorf("%s %s -> %q: not another %s", e.Name, r.name, e.Links[r.name], r.to)
			}
		}
		if len(e.Links) != n {
			t.Errorf("%s has %d links, want %d", e.Name, len(e.Links), n)
		}
		if e.Kind == Country && byName[e.Links[capital.name]].Links[locatedIn.name] != e.Name {
			t.Errorf("capital of %s is %s, a city of another country", e.Name, e.Links[capital.name])
		}
	}
	// Passages are short: two or three sentences (basic), four or five
	// (rich).
	for _, p := range w.Passages {
		if n := strings.Count(p.Text, "."); n < minSent || n > maxSent {
			t.Errorf("%s: %d sentences: %q", p.Title, n, p.Text)
		}
	}
}

func TestNamesNeverContainOneAnother(t *testing.T) {
	for _, cfg := range []Config{DefaultConfig(), richConfig()} {
		namesNeverContainOneAnother(t, generate(t, cfg))
	}
}

func namesNeverContainOneAnother(t *testing.T, w *World) {
	t.Helper()
	var nameWords []string
	for _, e := range w.Entities {
		nameWords = append(nameWords, words(e.Name)...)
	}
	for i, a := range nameWords {
		for j, b := range nameWords {
			if i != j && strings.Contains(a, b) {
				t.Errorf("name word %q contains name word %q", a, b)
			}
		}
		for _, x := range templateWords(w.schema) {
			if strings.Contains(x, a) {
				t.Errorf("template word %q contains name word %q", x, a)
			}
		}
		for _, x := range attributeWords() {
			if strings.Contains(a, x) {
				t.Errorf("name word %q contains answer word %q", a, x)
			}
		}
	}
	for _, a := range w.Entities {
		for _, b := range w.Entities {
			if a.Name != b.Name && strings.Contains(strings.ToLower(a.Name), strings.ToLower(b.Name)) {
				t.Errorf("name %q contains name %q", a.Name, b.Name)
			}
		}
	}
}

func TestQuestionsAndSplit(t *testing.T) {
	w := generate(t, DefaultConfig())
	// 1000 questions, 0.2 test: 200 test, 800 train. Hops cycle 1, 2, 3 over
	// question 0..999: 334 of one hop (0, 3, ..., 999), 333 of two and three.
	if len(w.Train) != 800 || len(w.Test) != 200 {
		t.Fatalf("train %d test %d, want 800 and 200", len(w.Train), len(w.Test))
	}
	hops := map[int]int{}
	ids, questions := map[string]bool{}, map[string]string{}
	for _, task := range allTasks(w) {
		hops[task.Hops]++
		if ids[task.ID] {
			t.Errorf("id %s twice", task.ID)
		}
		ids[task.ID] = true
		if split, dup := questions[task.Question]; dup {
			t.Errorf("question %q twice (in %s and %s)", task.Question, split, task.Meta["split"])
		}
		questions[task.Question] = task.Meta["split"]
		if len(task.Support) != task.Hops || len(task.Answers) != 1 || task.Dataset != "synthetic" ||
			!strings.HasSuffix(task.Question, " of "+task.Support[0]+".") {
			t.Errorf("malformed task %+v", task)
		}
	}
	if want := map[int]int{1: 334, 2: 333, 3: 333}; !reflect.DeepEqual(hops, want) {
		t.Errorf("hops = %v, want %v", hops, want)
	}
	for _, task := range w.Train {
		if task.Meta["split"] != "train" {
			t.Errorf("%s in train has split %q", task.ID, task.Meta["split"])
		}
	}
	four := generate(t, Config{Seed: 3, Entities: 300, Questions: 400, MaxHops: 4, TestFraction: 0.25})
	hops = map[int]int{}
	for _, task := range allTasks(four) {
		hops[task.Hops]++
	}
	if want := map[int]int{1: 100, 2: 100, 3: 100, 4: 100}; !reflect.DeepEqual(hops, want) || len(four.Test) != 100 {
		t.Errorf("MaxHops 4: hops = %v (want %v), test %d (want 100)", hops, want, len(four.Test))
	}
}

func TestVocabularyIsSmall(t *testing.T) {
	w := generate(t, DefaultConfig())
	nameWords := map[string]bool{}
	for _, e := range w.Entities {
		for _, x := range words(e.Name) {
			nameWords[x] = true
		}
	}
	template := templateWords(&basic)
	vocab := map[string]bool{}
	for _, text := range w.Texts() {
		for _, x := range words(text) {
			vocab[x] = true
			if !nameWords[x] && !slices.Contains(template, x) {
				t.Errorf("word %q is neither a name nor a template word", x)
			}
		}
	}
	// 100 people with two name words, 100 other entities with one: 300.
	// The language has 18 passage words, 28 attribute values and 13 question
	// words: 59.
	if len(nameWords) != 300 || len(template) != 59 || len(vocab) > 359 {
		t.Errorf("%d name words (want 300), %d template words (want 59), vocabulary %d (want <= 359)", len(nameWords), len(template), len(vocab))
	}
	t.Logf("vocabulary of the default world: %d words", len(vocab))
	// The rich schema adds 10 passage words and 8 question nouns.
	if n := len(templateWords(&rich)); n != 59+18 {
		t.Errorf("rich schema: %d template words, want 77", n)
	}
}

// worldIndex builds the real search index of a world's passages.
func worldIndex(t testing.TB, w *World) *search.Index {
	t.Helper()
	path := filepath.Join(t.TempDir(), "world.db")
	if err := search.BuildIndex(context.Background(), path, w.Passages, nil); err != nil {
		t.Fatal(err)
	}
	idx, err := search.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	return idx
}

func TestQuestionWordsAreNotInPassages(t *testing.T) {
	for _, cfg := range []Config{DefaultConfig(), richConfig()} {
		w := generate(t, cfg)
		idx := worldIndex(t, w)
		for _, word := range questionWords(w.schema) {
			hits, err := idx.Search(context.Background(), word, 5)
			if err != nil || len(hits) != 0 {
				t.Errorf("%q world: search %q: %d hits (%v), want none", cfg.Relations, word, len(hits), err)
			}
		}
	}
}

func TestMultiHopAnswerNotFoundBySearchingTheQuestion(t *testing.T) {
	for _, cfg := range []Config{DefaultConfig(), {Seed: 7, Entities: 60, Questions: 300, MaxHops: 4, TestFraction: 0.5, OODQuestions: 60}, richConfig()} {
		w := generate(t, cfg)
		idx := worldIndex(t, w)
		oneHop, oneHopFound := 0, 0
		for _, task := range allTasks(w) {
			hits, err := idx.Search(context.Background(), task.Question, 5)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, h := range hits {
				if strings.Contains(strings.ToLower(h.Title+" "+h.Text), strings.ToLower(task.Answers[0])) {
					found = true
				}
			}
			if task.Hops >= 2 && found {
				t.Errorf("seed %d: %d-hop %q: answer %q is in the top 5 of the question search", cfg.Seed, task.Hops, task.Question, task.Answers[0])
			}
			if task.Hops == 1 {
				oneHop++
				if found {
					oneHopFound++
				}
			}
		}
		// Not vacuous: the same search does find the answer of every 1-hop
		// question, whose passage is the start entity's.
		if oneHopFound != oneHop {
			t.Errorf("seed %d: the question search found the answer of %d of %d one-hop questions, want all", cfg.Seed, oneHopFound, oneHop)
		}
	}
}

func TestDemonstrationsFollowTheRealIndex(t *testing.T) {
	w := generate(t, Config{Seed: 5, Entities: 120, Questions: 400, MaxHops: 4, TestFraction: 0.2})
	idx := worldIndex(t, w)
	for _, task := range allTasks(w) {
		d, err := w.Demonstration(task)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Steps) != task.Hops || d.Answer != task.Answers[0] || d.Steps[len(d.Steps)-1].Found != d.Answer {
			t.Fatalf("%s: demo %+v does not fit %+v", task.ID, d, task)
		}
		for i, s := range d.Steps {
			if s.Title != task.Support[i] || i > 0 && s.Query != d.Steps[i-1].Found {
				t.Errorf("%s step %d: %+v, want title %q and the query found at the previous step", task.ID, i, s, task.Support[i])
			}
			hits, err := idx.Search(context.Background(), s.Query, 1)
			if err != nil || len(hits) != 1 || hits[0].Title != s.Title {
				t.Errorf("%s step %d: search %q top hit %v (%v), want %q", task.ID, i, s.Query, hits, err, s.Title)
				continue
			}
			if !strings.Contains(hits[0].Text, s.Found) {
				t.Errorf("%s step %d: passage %q does not give %q", task.ID, i, hits[0].Text, s.Found)
			}
		}
	}
	if _, err := w.Demonstration(envs.Task{ID: "nq-1"}); err == nil {
		t.Error("demonstration of a foreign task: no error")
	}
}

func TestConfigErrors(t *testing.T) {
	base := DefaultConfig()
	cases := []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.Entities = 11 }, "Entities"},
		{func(c *Config) { c.Questions = 0 }, "Questions"},
		{func(c *Config) { c.MaxHops = 0 }, "MaxHops"},
		{func(c *Config) { c.MaxHops = 5 }, "MaxHops"},
		{func(c *Config) { c.TestFraction = 1 }, "TestFraction"},
		{func(c *Config) { c.TestFraction = math.NaN() }, "TestFraction"},
		{func(c *Config) { c.OODQuestions = -1 }, "OODQuestions"},
		{func(c *Config) { c.OODQuestions, c.MaxHops = 10, 1 }, "MaxHops >= 2"},
		{func(c *Config) { c.Relations = "full" }, `Relations = "full", want basic or rich`},
		// 12 entities cannot carry 2000 distinct questions.
		{func(c *Config) { c.Entities, c.Questions = 12, 2000 }, "use more Entities"},
		// 10^8 entities take 1.5 x 10^8 name words: refused at once.
		{func(c *Config) { c.Entities = 100_000_000 }, "Entities = 100000000 takes more name words than the 500000"},
	}
	for _, c := range cases {
		cfg := base
		c.mutate(&cfg)
		if _, err := Generate(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config %+v: err = %v, want it to mention %q", cfg, err, c.want)
		}
	}
}

// The phrases of the held-out compositions, as questions word them
// (outermost relation first): born_in then located_in is "the nation of
// the birthplace of X", works_for then based_in is "the headquarters of
// the employer of X".
var heldOutPhrases = []string{"nation of the birthplace of", "headquarters of the employer of"}

func heldOutPhrase(question string) bool {
	for _, p := range heldOutPhrases {
		if strings.Contains(question, p) {
			return true
		}
	}
	return false
}

// heldOutSplit checks w's out-of-domain split: every out-of-domain question
// composes a held-out pair (held says whether a question's words do) and no
// in-domain one does, no out-of-domain question is also in-domain, each is
// marked as such, and each noun is still asked about in training (in other
// compositions or alone). It returns the out-of-domain questions' hops.
func heldOutSplit(t *testing.T, w *World, held func(string) bool, nouns []string) map[int]int {
	t.Helper()
	questions := map[string]bool{}
	for _, task := range append(append([]envs.Task{}, w.Train...), w.Test...) {
		questions[task.Question] = true
		if held(task.Question) {
			t.Errorf("in-domain %s question %q composes a held-out pair", task.Meta["split"], task.Question)
		}
	}
	hops := map[int]int{}
	for _, task := range w.OOD {
		hops[task.Hops]++
		if !held(task.Question) {
			t.Errorf("out-of-domain question %q composes no held-out pair", task.Question)
		}
		if questions[task.Question] {
			t.Errorf("out-of-domain question %q is also in-domain", task.Question)
		}
		questions[task.Question] = true
		if task.Meta["split"] != "ood" || !strings.Contains(task.ID, "-ood-") {
			t.Errorf("out-of-domain task %s has split %q", task.ID, task.Meta["split"])
		}
	}
	for _, noun := range nouns {
		if !slices.ContainsFunc(w.Train, func(task envs.Task) bool { return strings.Contains(task.Question, " "+noun+" of ") }) {
			t.Errorf("no training question asks about the %s", noun)
		}
	}
	return hops
}

func TestOutOfDomainSplit(t *testing.T) {
	// The default job's world: 80 entities, 400 in-domain questions of 1-3
	// hops, a quarter held out, and 60 out-of-domain questions.
	cfg := Config{Seed: 7, Entities: 80, Questions: 400, MaxHops: 3, TestFraction: 0.25, OODQuestions: 60}
	w := generate(t, cfg)
	if len(w.Train) != 300 || len(w.Test) != 100 || len(w.OOD) != 60 {
		t.Fatalf("train %d test %d ood %d, want 300, 100 and 60", len(w.Train), len(w.Test), len(w.OOD))
	}
	// Hops cycle 2, 3 over out-of-domain question 0..59: 30 of each.
	if hops := heldOutSplit(t, w, heldOutPhrase, []string{"nation", "birthplace", "headquarters", "employer"}); !reflect.DeepEqual(hops, map[int]int{2: 30, 3: 30}) {
		t.Errorf("out-of-domain hops = %v, want 2: 30, 3: 30", hops)
	}
	for _, task := range w.OOD {
		d, err := w.Demonstration(task)
		if err != nil || d.Answer != task.Answers[0] || len(d.Steps) != task.Hops {
			t.Errorf("%s: demonstration %+v (%v)", task.ID, d, err)
		}
	}
	// Not vacuous: without out-of-domain questions the same world's
	// in-domain questions do use the held-out compositions.
	cfg.OODQuestions = 0
	free := generate(t, cfg)
	n := 0
	for _, task := range allTasks(free) {
		if heldOutPhrase(task.Question) {
			n++
		}
	}
	if n == 0 || len(free.OOD) != 0 {
		t.Errorf("OODQuestions 0: %d in-domain questions with a held-out composition (want some), %d out-of-domain", n, len(free.OOD))
	}
}

func TestPassageByTitle(t *testing.T) {
	w := generate(t, Config{Seed: 2, Entities: 24, Questions: 20, MaxHops: 2})
	e := w.Entities[5]
	p, ok := w.Passage(e.Name)
	if !ok || p.Title != e.Name || !strings.HasPrefix(p.Text, e.Name+" ") {
		t.Fatalf("Passage(%q) = %+v, %v", e.Name, p, ok)
	}
	if _, ok := w.Passage("Nobody"); ok {
		t.Fatal("a passage for a name of no entity")
	}
}

// TestRichOutOfDomainSplit: make paper's world has the sizes the protocol
// asks for, and its six held-out compositions (worded as the questions word
// them) are in every out-of-domain question and in no in-domain one, while
// each of their relations is still asked about in training.
func TestRichOutOfDomainSplit(t *testing.T) {
	w := generate(t, richConfig())
	if len(w.Train) != 600 || len(w.Test) != 1000 || len(w.OOD) != 500 {
		t.Fatalf("train %d test %d ood %d, want 600, 1000 and 500", len(w.Train), len(w.Test), len(w.OOD))
	}
	phrases := append(slices.Clone(heldOutPhrases), "mayor of the home of", "chief of the owner of",
		"birthplace of the mentor of", "employer of the leader of")
	held := func(q string) bool {
		return slices.ContainsFunc(phrases, func(p string) bool { return strings.Contains(q, p) })
	}
	var nouns []string
	for _, r := range rich.relations {
		nouns = append(nouns, r.noun)
	}
	if hops := heldOutSplit(t, w, held, nouns); !reflect.DeepEqual(hops, map[int]int{2: 250, 3: 250}) {
		t.Errorf("out-of-domain hops = %v, want 2: 250, 3: 250", hops)
	}
	// 1,600 questions cycle 1, 2, 3 hops and are shuffled before the split:
	// each hop count has about a third of the test split.
	hops := map[int]int{}
	for _, task := range w.Test {
		hops[task.Hops]++
	}
	for h := 1; h <= 3; h++ {
		if hops[h] < 290 || hops[h] > 380 {
			t.Errorf("%d test questions of %d hops, want about 333 (%v)", hops[h], h, hops)
		}
	}
}

// The namer draws 100,000 words, which the name pool of worlds of 16,667
// entities takes, in a time that does not grow with the square of the
// words (it took minutes when each new word was checked against every
// word drawn; the watchdog only turns that into a failure). No word
// contains another, none sits in a template word, none contains an
// answer, checked through each word's substrings.
func TestNamerDrawsManyWords(t *testing.T) {
	const n = 100_000
	names := newNamer(rand.New(rand.NewPCG(3, 4)), schemas["rich"])
	drawn := make(chan []string, 1)
	go func() {
		var ws []string
		for range n {
			w, err := names.word()
			if err != nil {
				t.Error(err)
				break
			}
			ws = append(ws, strings.ToLower(w))
		}
		drawn <- ws
	}()
	var ws []string
	select {
	case ws = <-drawn:
	case <-time.After(time.Minute):
		t.Fatalf("%d name words still not drawn after a minute", n)
	}
	set := map[string]bool{}
	for _, w := range ws {
		if set[w] {
			t.Fatalf("%q drawn twice", w)
		}
		set[w] = true
	}
	for _, w := range ws {
		for i := range w {
			for j := i + 1; j <= len(w); j++ {
				if s := w[i:j]; s != w && set[s] {
					t.Fatalf("name word %q contains name word %q", w, s)
				}
			}
		}
		for _, x := range attributeWords() {
			if strings.Contains(w, x) {
				t.Fatalf("name word %q contains answer word %q", w, x)
			}
		}
	}
	for _, x := range templateWords(schemas["rich"]) {
		for i := range x {
			for j := i + 1; j <= len(x); j++ {
				if set[x[i:j]] {
					t.Fatalf("template word %q contains name word %q", x, x[i:j])
				}
			}
		}
	}
}
