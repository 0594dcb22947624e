package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkReport wants html to be the printed path of an HTML page with PNG
// plots beside it.
func checkReport(t *testing.T, printed, html string) {
	t.Helper()
	if strings.TrimSpace(printed) != html {
		t.Errorf("report printed %q, want %q", printed, html)
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatalf("report: %v", err)
	}
	if !strings.Contains(strings.ToLower(string(b)), "<html") {
		t.Errorf("%s is not an HTML page", html)
	}
	pngs, _ := filepath.Glob(filepath.Join(filepath.Dir(html), "*.png"))
	if len(pngs) == 0 {
		t.Errorf("no plots beside %s", html)
	}
}

func TestReport(t *testing.T) {
	run := trainedRun(t)
	out := filepath.Join(t.TempDir(), "rep")
	r := ok(t, "report", "--run-dir", run.runs, "--out", out, "--run", run.name)
	checkReport(t, r.stdout, filepath.Join(out, "report.html"))

	// A store file names the run as well; without --out the report goes
	// to <run>/report.
	if err := os.RemoveAll(filepath.Join(run.dir(), "report")); err != nil {
		t.Fatal(err)
	}
	r = ok(t, "report", "--store", filepath.Join(run.dir(), "store.db"))
	checkReport(t, r.stdout, filepath.Join(run.dir(), "report", "report.html"))

	// So does the run's folder.
	byDir := filepath.Join(t.TempDir(), "bydir")
	r = ok(t, "report", "--out", byDir, "--store", run.dir())
	checkReport(t, r.stdout, filepath.Join(byDir, "report.html"))

	fails(t, []string{"run ghost", filepath.Join(run.runs, "ghost", "store.db")}, "report", "--run-dir", run.runs, "--run", "ghost")
	fails(t, []string{"at least one --run NAME"}, "report")
	// A name given as a store is refused, naming --run.
	fails(t, []string{"no file or folder ghost", "--run ghost"}, "report", "--run-dir", run.runs, "--store", "ghost")
	empty := t.TempDir()
	fails(t, []string{empty, "holds no store.db"}, "report", "--store", empty)
	// A store given as an argument is refused, naming --store.
	fails(t, []string{`unexpected argument "` + run.dir() + `"`, "--store " + run.dir()}, "report", run.dir())
}

func TestEvalOfRun(t *testing.T) {
	run := trainedRun(t)
	r := ok(t, "eval", "--run-dir", run.runs, "--run", run.name, "--threads", "1")
	checkResults(t, r.stdout, "Naive RAG", "Policy")
	store := filepath.Join(run.runs, run.name+"-eval", "store.db")
	if !strings.Contains(r.stdout, "store: "+store) {
		t.Errorf("eval does not name its store %s:\n%s", store, r)
	}
	// With the run's config (eval.max_eval 4): Naive RAG and the policy on
	// 4 questions each.
	if n := trajectoryCounts(t, store)["eval"]; n != 8 {
		t.Errorf("%d evaluation trajectories, want 8", n)
	}

	// Two stores compare into one page.
	out := filepath.Join(t.TempDir(), "cmp")
	r = ok(t, "report", "--run-dir", run.runs, "--out", out, "--run", run.name, "--run", run.name+"-eval")
	if !strings.HasSuffix(strings.TrimSpace(r.stdout), ".html") {
		t.Errorf("compare printed %q, want an HTML page", r.stdout)
	} else if _, err := os.Stat(strings.TrimSpace(r.stdout)); err != nil {
		t.Errorf("compare: %v", err)
	}

	fails(t, []string{"eval --run ghost", filepath.Join(run.runs, "ghost", "config.yaml")}, "eval", "--run-dir", run.runs, "--run", "ghost")
	fails(t, []string{"give --run RUN or --model DIR"}, "eval")
}

func TestEvalModelPath(t *testing.T) {
	run := trainedRun(t)
	args := append([]string{"eval", "--model", filepath.Join(run.dir(), "final"), "--run-dir", t.TempDir(), "--run", "by-path"}, tinyRun...)
	checkResults(t, ok(t, args...).stdout, "Naive RAG", "Policy")
}
