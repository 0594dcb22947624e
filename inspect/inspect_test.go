package inspect

import (
	"bytes"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/internal/readonlytest"
	"github.com/agentrl/agentrl/trainer/store"
)

// rowIDs are the trajectory ids a table page lists, in order.
var rowIDs = regexp.MustCompile(`class="tid" href="/r/0/t/[0-9]+">([^<]+)<`)

func ids(body string) []string {
	var out []string
	for _, m := range rowIDs.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestListFilters(t *testing.T) {
	ts := newTestServer(t, Source{Label: "demo", Path: writeFixture(t, t.TempDir(), "demo", 2)})
	// Expected rows read off fixtureRows, in written order unless sorted.
	for _, c := range []struct {
		query string
		want  string
	}{
		{"", "0-eval-0-0 0-eval-1-0 1-train-0-0 1-train-0-1 1-train-1-0 1-train-1-1 2-train-0-0 2-train-0-1 2-train-1-0 2-train-1-1 2-eval-0-0 2-eval-1-0"},
		{"iteration=2", "2-train-0-0 2-train-0-1 2-train-1-0 2-train-1-1 2-eval-0-0 2-eval-1-0"},
		{"split=eval", "0-eval-0-0 0-eval-1-0 2-eval-0-0 2-eval-1-0"},
		{"correct=0", "0-eval-1-0 1-train-0-1 1-train-1-1 2-train-0-1 2-train-1-1"},
		{"reward_min=1&reward_max=1.2", "0-eval-0-0 1-train-0-0 1-train-1-0 2-eval-0-0 2-eval-1-0"},
		{"stop=max_turns", "1-train-1-1"},
		{"tool=lookup", "0-eval-1-0 1-train-0-1 1-train-1-0 2-train-0-0 2-eval-1-0"},
		{"turns=1", "2-train-1-0 2-train-1-1"},
		{"q=saint", "1-train-1-0 2-train-0-0 2-eval-1-0"},                                     // in the answers
		{"q=FRANCE", "0-eval-0-0 1-train-0-0 1-train-0-1 2-train-1-0 2-train-1-1 2-eval-0-0"}, // t1's question, any case
		{"q=_", ""},     // a literal underscore, not LIKE's any-character
		{"q=50%25", ""}, // a literal "50%"
		{"iteration=1&correct=1", "1-train-0-0 1-train-1-0"},
		{"split=train&sort=reward&dir=desc", "2-train-0-0 2-train-1-0 1-train-0-0 1-train-1-0 2-train-0-1 1-train-0-1 2-train-1-1 1-train-1-1"},
		{"split=train&sort=reward", "1-train-1-1 2-train-1-1 1-train-0-1 2-train-0-1 1-train-1-0 1-train-0-0 2-train-1-0 2-train-0-0"},
		{"split=eval&sort=iteration&dir=desc", "2-eval-1-0 2-eval-0-0 0-eval-1-0 0-eval-0-0"},
	} {
		status, body := get(t, ts.URL+"/r/0/trajectories?"+c.query)
		if status != http.StatusOK {
			t.Errorf("?%s: status %d", c.query, status)
			continue
		}
		if got := strings.Join(ids(body), " "); got != c.want {
			t.Errorf("?%s: rows %q, want %q", c.query, got, c.want)
		}
		n := len(strings.Fields(c.want))
		if !strings.Contains(body, `<span id="count"><b>`+strconv.Itoa(n)+`</b> trajectories match`) {
			t.Errorf("?%s: the count does not say %d", c.query, n)
		}
	}
}

func TestBadInput(t *testing.T) {
	ts := newTestServer(t, Source{Label: "demo", Path: writeFixture(t, t.TempDir(), "demo", 2)})
	for _, c := range []struct {
		path   string
		status int
		says   string // the error page names the culprit
	}{
		{"/r/5/trajectories", 404, `no run &#34;5&#34;`},
		{"/r/x/t/1", 404, `no run &#34;x&#34;`},
		{"/r/0/t/abc", 400, `trajectory &#34;abc&#34;`},
		{"/r/0/t/999", 404, "no trajectory 999"},
		{"/r/0/trajectories?iteration=-1", 400, "iteration="},
		{"/r/0/trajectories?iteration=x", 400, "iteration="},
		{"/r/0/trajectories?turns=1.5", 400, "turns="},
		{"/r/0/trajectories?reward_min=abc", 400, "reward_min="},
		{"/r/0/trajectories?reward_max=1e", 400, "reward_max="},
		{"/r/0/trajectories?split=test", 400, "split="},
		{"/r/0/trajectories?correct=yes", 400, "correct="},
		{"/r/0/trajectories?stop=done", 400, "stop="},
		{"/r/0/trajectories?sort=question", 400, "sort="},
		{"/r/0/trajectories?dir=up", 400, "dir="},
		{"/r/0/trajectories?page=0", 400, "page="},
		{"/r/0/trajectories?page=2", 404, "page 2"}, // 12 rows fill one page
		{"/chart/99.png", 404, "no chart 99"},
		{"/chart/x.png", 404, "no chart"},
		{"/?run=7", 400, "run="},
		{"/nope", 404, "no page at /nope"},
		{"/r/0/sql?q=DROP+TABLE+runs", 400, "refused"},
		{"/r/0/sql?q=" + url.QueryEscape("ATTACH DATABASE '/tmp/x.db' AS x"), 400, "refused"},
		{"/r/0/sql?q=" + url.QueryEscape("PRAGMA query_only = 0"), 400, "refused"},
		{"/r/0/sql?q=SELEC", 400, "syntax error"},
	} {
		status, body := get(t, ts.URL+c.path)
		if status != c.status || !strings.Contains(body, c.says) {
			t.Errorf("%s: status %d, want %d with %q in the page", c.path, status, c.status, c.says)
		}
	}
	resp, err := http.Post(ts.URL+"/r/0/sql", "application/x-www-form-urlencoded", strings.NewReader("q=DELETE+FROM+runs"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d, want 405", resp.StatusCode)
	}
}

// Every page of the app leaves the store's file byte for byte as it was,
// whatever the SQL box is asked.
func TestStoreUnchanged(t *testing.T) {
	dir := t.TempDir()
	path := writeFixture(t, dir, "demo", 2)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, Source{Label: "demo", Path: path})
	for _, p := range []string{"/", "/chart/0.png", "/api/state", "/r/0/trajectories?q=x", "/r/0/t/1", "/r/0/t/5",
		"/r/0/sql?q=" + url.QueryEscape("DELETE FROM trajectories"),
		"/r/0/sql?q=" + url.QueryEscape("UPDATE runs SET name = 'x'"),
		"/r/0/sql?q=" + url.QueryEscape("CREATE TABLE t (x)"),
		"/r/0/sql?q=" + url.QueryEscape("VACUUM"),
		"/r/0/sql?q=" + url.QueryEscape("SELECT * FROM trajectories")} {
		get(t, ts.URL+p)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("the store file changed while the app served it")
	}
	if n := countRows(t, path); n != 12 {
		t.Errorf("%d trajectories after the writes were refused, want 12", n)
	}
}

// countRows counts the trajectories of the store at path.
func countRows(t *testing.T, path string) int64 {
	t.Helper()
	_, rows, err := store.QueryReadOnly(path, "SELECT COUNT(*) FROM trajectories")
	if err != nil {
		t.Fatal(err)
	}
	return rows[0][0].(int64)
}

// A run being written: the app reads it through the WAL while the
// trainer's connection holds it, and sees each new iteration.
func TestLiveRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live", "store.db")
	w, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.BeginRun(store.RunInfo{Name: "live"}); err != nil {
		t.Fatal(err)
	}
	writeIterations(t, w, 0, 1) // 2 + 4 trajectories
	ts := newTestServer(t, Source{Label: "live", Path: path})
	_, state1 := get(t, ts.URL+"/api/state")
	if _, body := get(t, ts.URL+"/r/0/trajectories"); len(ids(body)) != 6 {
		t.Fatalf("live run after iteration 1: %d rows, want 6", len(ids(body)))
	}
	writeIterations(t, w, 2, 2) // 6 more
	_, state2 := get(t, ts.URL+"/api/state")
	if state1 == state2 {
		t.Errorf("the state %s did not change when iteration 2 was written", state1)
	}
	if _, body := get(t, ts.URL+"/r/0/trajectories?iteration=2"); len(ids(body)) != 6 {
		t.Errorf("live run after iteration 2: %d rows of iteration 2, want 6", len(ids(body)))
	}
	if status, body := get(t, ts.URL+"/"); status != 200 || !strings.Contains(body, `/chart/0.png`) {
		t.Errorf("runs page of the live run: status %d, no chart", status)
	}
}

// A finished run in a read-only folder is served whole.
func TestReadOnlyFolder(t *testing.T) {
	dir := t.TempDir()
	path := writeFixture(t, dir, "demo", 2)
	readonlytest.Dir(t, dir)
	ts := newTestServer(t, Source{Label: "demo", Path: path})
	for _, p := range []string{"/", "/chart/0.png", "/r/0/trajectories?tool=search", "/r/0/t/5",
		"/r/0/sql?q=" + url.QueryEscape("SELECT * FROM reward_by_iteration")} {
		if status, _ := get(t, ts.URL+p); status != http.StatusOK {
			t.Errorf("%s in a read-only folder: status %d", p, status)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	dir := t.TempDir()
	if _, err := New([]Source{{Label: "x", Path: filepath.Join(dir, "missing.db")}}); err == nil || !strings.Contains(err.Error(), "missing.db") {
		t.Errorf("a missing store: %v, want an error naming it", err)
	}
	if _, err := New(nil); err == nil {
		t.Error("no sources: no error")
	}
	two := filepath.Join(dir, "two.db")
	s, err := store.Open(two)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		if err := s.BeginRun(store.RunInfo{Name: n}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	if _, err := New([]Source{{Label: "two", Path: two}}); err == nil || !strings.Contains(err.Error(), "several runs") {
		t.Errorf("a store of two runs: %v, want an error saying it holds several", err)
	}
}

// The token view of an iteration-0 trajectory, which has no training
// logprobs or entropies: those colourings are offered disabled, and the
// page carries no values for them.
func TestTokenModesNotStored(t *testing.T) {
	ts := newTestServer(t, Source{Label: "demo", Path: writeFixture(t, t.TempDir(), "demo", 0)})
	_, body := get(t, ts.URL+"/r/0/t/1")
	for _, want := range []string{`<option value="advantage">`, `<option value="ratio" disabled>`, `<option value="entropy" disabled>`} {
		if !strings.Contains(body, want) {
			t.Errorf("trajectory page lacks %s", want)
		}
	}
	if strings.Contains(body, `"ratio":`) || strings.Contains(body, `"entropy":`) {
		t.Error("the token data carries ratio or entropy values that were not stored")
	}
}

// The SQL box's examples are docs/store.md's, in its order.
func TestExamplesMatchDocs(t *testing.T) {
	b, err := os.ReadFile("../docs/store.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	doc = doc[strings.Index(doc, "## Example queries"):]
	re := regexp.MustCompile("(?s)\\n[0-9]+\\. ([^\\n]*)\\n\\n```sql example\\n(.*?)\\n```")
	found := re.FindAllStringSubmatch(doc, -1)
	if len(found) == 0 || len(found) != len(examples) {
		t.Fatalf("docs/store.md has %d example queries, the SQL box %d", len(found), len(examples))
	}
	for i, m := range found {
		if examples[i].Title != m[1] || examples[i].SQL != m[2] {
			t.Errorf("example %d is %q %q, docs/store.md has %q %q", i+1, examples[i].Title, examples[i].SQL, m[1], m[2])
		}
	}
}

// The table pages on the server: one generated iteration holds 1,000
// trajectories (100 groups of 8 training samples, then 200 evaluation
// episodes), 20 pages of 50.
func TestPagination(t *testing.T) {
	ts := newTestServer(t, Source{Label: "gen", Path: genStore(t, t.TempDir(), 1)})
	pageIDs := func(page string) ([]string, string) {
		t.Helper()
		status, body := get(t, ts.URL+"/r/0/trajectories?page="+page)
		if status != http.StatusOK {
			t.Fatalf("page %s: status %d", page, status)
		}
		return ids(body), body
	}
	first, body := pageIDs("1")
	// Written order: group g's samples 0-7 are rows 8g+1 to 8g+8, so page 1
	// ends at group 6, sample 1 (row 50 = 8*6 + 2).
	if len(first) != 50 || first[0] != "0-train-0-0" || first[49] != "0-train-6-1" {
		t.Errorf("page 1: %d rows from %v to %v, want 50 from 0-train-0-0 to 0-train-6-1", len(first), first[0], first[len(first)-1])
	}
	if !strings.Contains(body, `<b>1000</b> trajectories match`) || !strings.Contains(body, `id="next" href="?page=2"`) || strings.Contains(body, `id="prev"`) {
		t.Error("page 1 does not count 1000 rows, link to page 2 and no previous page")
	}
	// The last page holds rows 951-1000: evaluation episodes 150-199
	// (rows 801-1000).
	last, body := pageIDs("20")
	if len(last) != 50 || last[0] != "0-eval-150-0" || last[49] != "0-eval-199-0" {
		t.Errorf("page 20: %d rows from %v to %v, want 50 from 0-eval-150-0 to 0-eval-199-0", len(last), last[0], last[len(last)-1])
	}
	if strings.Contains(body, `id="next"`) || !strings.Contains(body, `id="prev" href="?page=19"`) {
		t.Error("page 20 links to a next page, or not to page 19")
	}
	if status, _ := get(t, ts.URL+"/r/0/trajectories?page=21"); status != http.StatusNotFound {
		t.Errorf("page 21 of 20: status %d, want 404", status)
	}
}
