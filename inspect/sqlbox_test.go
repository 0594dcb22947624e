package inspect

import (
	"net/url"
	"runtime"
	"strings"
	"testing"
)

// A statement that would hold a transaction or change a connection's
// settings (BEGIN, SAVEPOINT, a PRAGMA that sets) leaves nothing behind:
// every later page still works, and a later query sees SQLite's defaults.
func TestSQLBoxLeavesNoState(t *testing.T) {
	ts := newTestServer(t, Source{Label: "demo", Path: writeFixture(t, t.TempDir(), "demo", 2)})
	for _, q := range []string{"BEGIN", "BEGIN IMMEDIATE", "SAVEPOINT s", "PRAGMA case_sensitive_like = 1"} {
		get(t, ts.URL+"/r/0/sql?q="+url.QueryEscape(q))
		for _, p := range []string{"/", "/r/0/trajectories", "/r/0/t/1", "/api/state",
			"/r/0/sql?q=" + url.QueryEscape("SELECT 'a' LIKE 'A' AS insensitive")} {
			status, body := get(t, ts.URL+p)
			if status != 200 {
				t.Fatalf("after %q: %s is %d:\n%s", q, p, status, body)
			}
			if strings.Contains(p, "insensitive") && !strings.Contains(body, "<td>1</td>") {
				t.Fatalf("after %q: LIKE is case-sensitive in a later query:\n%s", q, body)
			}
		}
	}
}

// The SQL box's memory is bounded: a value over the length limit is
// refused, naming the limit, before it is made, and a result of many large
// values stops at the byte budget, shown as truncated.
func TestSQLBoxMemoryBound(t *testing.T) {
	ts := newTestServer(t, Source{Label: "demo", Path: writeFixture(t, t.TempDir(), "demo", 2)})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	status, body := get(t, ts.URL+"/r/0/sql?q="+url.QueryEscape("SELECT zeroblob(50000000) FROM trajectories LIMIT 3"))
	if status != 400 || !strings.Contains(body, "SQLITE_LIMIT_LENGTH") {
		t.Errorf("a 50 MB value: status %d, want 400 naming SQLITE_LIMIT_LENGTH", status)
	}
	status, body = get(t, ts.URL+"/r/0/sql?q="+url.QueryEscape(
		"WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT zeroblob(1000000), i FROM c LIMIT 500"))
	if status != 200 || !strings.Contains(body, "(more not shown)") {
		t.Errorf("500 values of 1 MB: status %d, want 200 with a truncated result", status)
	}
	runtime.ReadMemStats(&after)
	if mb := float64(after.TotalAlloc-before.TotalAlloc) / (1 << 20); mb > 100 {
		t.Errorf("the two queries allocated %.0f MiB", mb)
	}
}
