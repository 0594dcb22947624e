package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// resultsTable parses the results table train and eval print: method ->
// column -> value, and the names of the value columns in order. A "95%"
// column, the half width of the interval of the column before it, is
// read as that column's name and "±" ("EM±").
func resultsTable(t *testing.T, out string) (map[string]map[string]float64, []string) {
	t.Helper()
	_, table, found := strings.Cut(out, "Results (exact match on the evaluation split):")
	if !found {
		t.Fatalf("no results table in:\n%s", out)
	}
	table, _, _ = strings.Cut(strings.TrimLeft(table, "\n"), "\n\n") // the table ends at a blank line
	ls := lines(table)
	if len(ls) < 2 || !strings.HasPrefix(ls[0], "method") {
		t.Fatalf("results table:\n%s", table)
	}
	cols := strings.Fields(ls[0])[1:]
	for i, c := range cols {
		if c == "95%" { // the half width of the interval of the column before it
			cols[i] = cols[i-1] + "±"
		}
	}
	rows := map[string]map[string]float64{}
	for _, l := range ls[1:] {
		f := strings.Fields(l)
		if len(f) <= len(cols) {
			t.Fatalf("results row %q: want a method and %d values", l, len(cols))
		}
		method := strings.Join(f[:len(f)-len(cols)], " ")
		rows[method] = map[string]float64{}
		for i, c := range cols {
			cell := f[len(f)-len(cols)+i]
			if cell == "–" { // none: a method not evaluated there
				rows[method][c] = math.NaN()
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimPrefix(cell, "±"), 64)
			if err != nil {
				t.Fatalf("results row %q: %v", l, err)
			}
			rows[method][c] = v
		}
	}
	var named []string // the columns of values, without the intervals' half widths
	for _, c := range cols {
		if !strings.HasSuffix(c, "±") {
			named = append(named, c)
		}
	}
	return rows, named
}

// checkResults wants the given methods, hop columns among 1-hop and 2-hop
// (the tiny world has at most 2), values in [0, 1] and an EM that is a
// multiple of 1/4 (4 evaluation questions), on the evaluation split and
// on the out-of-domain one when there is one.
func checkResults(t *testing.T, out string, methods ...string) {
	t.Helper()
	rows, cols := resultsTable(t, out)
	// Out-of-domain questions (at most 4 evaluated) make a last column.
	if len(cols) > 0 && cols[len(cols)-1] == "OOD-EM" {
		for _, m := range methods {
			if q := rows[m]["OOD-EM"] * 4; q != float64(int(q)) {
				t.Errorf("%s OOD-EM = %v, want a multiple of 1/4", m, rows[m]["OOD-EM"])
			}
		}
		cols = cols[:len(cols)-1]
	}
	if len(cols) < 3 || cols[len(cols)-2] != "EM" || cols[len(cols)-1] != "F1" {
		t.Fatalf("columns %v, want hop columns then EM F1", cols)
	}
	// train prints each EM's 95% interval (its half width) beside it.
	if strings.Contains(out, "trainer rollouts sql") {
		for _, m := range methods {
			if h, ok := rows[m]["EM±"]; !ok || !(h >= 0 && h <= 1) {
				t.Errorf("%s: EM's interval half width %v (present %v), want one in [0, 1]", m, h, ok)
			}
		}
	}
	for _, c := range cols[:len(cols)-2] {
		if c != "1-hop" && c != "2-hop" {
			t.Errorf("column %s: the world has 1- and 2-hop questions only", c)
		}
	}
	if len(rows) != len(methods) {
		t.Errorf("methods %v, want %v", rows, methods)
	}
	for _, m := range methods {
		r, ok := rows[m]
		if !ok {
			t.Errorf("no row for %s in:\n%s", m, out)
			continue
		}
		for c, v := range r {
			if v < 0 || v > 1 {
				t.Errorf("%s %s = %v, outside [0, 1]", m, c, v)
			}
		}
		if q := r["EM"] * 4; q != float64(int(q)) {
			t.Errorf("%s EM = %v, want a multiple of 1/4", m, r["EM"])
		}
	}
}

// trajectoryCounts counts the stored trajectories by split.
func trajectoryCounts(t *testing.T, store string) map[string]int {
	t.Helper()
	r := ok(t, "rollouts", "sql", "--store", store, "SELECT split, COUNT(*) AS n FROM trajectories GROUP BY split")
	ls := lines(r.stdout)
	if len(ls) == 0 || strings.Join(strings.Fields(ls[0]), " ") != "split n" {
		t.Fatalf("count query:\n%s", r)
	}
	counts := map[string]int{}
	for _, l := range ls[1:] {
		f := strings.Fields(l)
		if len(f) != 2 {
			t.Fatalf("count query row %q", l)
		}
		counts[f[0]] = atoi(t, f[1])
	}
	return counts
}

func TestTrainTiny(t *testing.T) {
	run := trainedRun(t)
	dir := run.dir()
	checkResults(t, run.out.stdout, "Naive RAG", "Base Tool Call", "RL (grpo)")
	store := filepath.Join(dir, "store.db")
	for _, want := range []string{"store:  " + store, "policy: " + filepath.Join(dir, "final"),
		"report: " + filepath.Join(dir, "report", "report.html")} {
		if !strings.Contains(run.out.stdout, want) {
			t.Errorf("train output lacks %q:\n%s", want, run.out)
		}
	}
	if !strings.Contains(run.out.stderr, "effective config (saved to "+filepath.Join(dir, "config.yaml")+")") {
		t.Errorf("train does not show the effective config:\n%s", run.out)
	}
	for _, f := range []string{"config.yaml", "store.db", "index.db", "log.jsonl", "report/report.html",
		"final/config.json", "final/model.safetensors", "final/tokenizer.json", "final/tokenizer_config.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run output: %v", err)
		}
	}
	if cks, _ := os.ReadDir(filepath.Join(dir, "checkpoints")); len(cks) == 0 {
		t.Errorf("no checkpoint in %s", filepath.Join(dir, "checkpoints"))
	}

	// The saved config is the effective one: the flags over the defaults.
	var saved struct {
		Run   struct{ Name string }
		Model struct {
			Tiny struct{ Hidden, Layers int }
		}
		Rollout struct {
			GroupSize int `yaml:"group_size"`
		}
	}
	y, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(y, &saved); err != nil {
		t.Fatalf("config.yaml: %v", err)
	}
	if saved.Run.Name != "tiny" || saved.Model.Tiny.Hidden != 32 || saved.Model.Tiny.Layers != 2 || saved.Rollout.GroupSize != 2 {
		t.Errorf("saved config %+v, want run tiny, hidden 32, the default 2 layers, group size 2", saved)
	}

	// The policy is a HF folder of the model asked for.
	var hf struct {
		Hidden  int `json:"hidden_size"`
		Inter   int `json:"intermediate_size"`
		Layers  int `json:"num_hidden_layers"`
		Heads   int `json:"num_attention_heads"`
		KVHeads int `json:"num_key_value_heads"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "final", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &hf); err != nil {
		t.Fatal(err)
	}
	if hf.Hidden != 32 || hf.Inter != 64 || hf.Layers != 2 || hf.Heads != 2 || hf.KVHeads != 1 {
		t.Errorf("final/config.json %+v, want hidden 32, intermediate 64, 2 layers, 2 heads, 1 kv head", hf)
	}

	// The log is JSON lines, each naming the run; one iteration was run.
	logb, err := os.ReadFile(filepath.Join(dir, "log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var iterations []int
	for _, l := range lines(string(logb)) {
		var e struct {
			Run       string
			Message   string
			Iteration *int
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("log.jsonl line %q: %v", l, err)
		}
		if e.Run != "tiny" {
			t.Errorf("log line without the run's name: %s", l)
		}
		if e.Message == "iteration" && e.Iteration != nil {
			iterations = append(iterations, *e.Iteration)
		}
	}
	if len(iterations) != 1 || iterations[0] != 1 {
		t.Errorf("logged iterations %v, want [1]", iterations)
	}

	// 1 iteration x 2 prompts x 2 samples = 4 training trajectories.
	if n := trajectoryCounts(t, store)["train"]; n != 4 {
		t.Errorf("%d training trajectories, want 4", n)
	}
}

func TestTrainDryRun(t *testing.T) {
	t.Parallel() // independent of the shared run
	runs := filepath.Join(t.TempDir(), "runs")
	args := append([]string{"train", "--dry-run", "--run-dir", runs, "--run", "dry"}, tinyRun...)
	r := ok(t, args...)
	// 40 questions, 25% held out: 10 evaluation, 30 training; one passage
	// per entity: 24. The CPU decode step is named (which one depends on
	// the CPU: dryrun.TestDryRunNamesDecode pins it).
	for _, want := range []string{"data:      30 training and 10 evaluation questions", "(24 passages)",
		"tools:     search", "hidden 32, 2 layers, 2 heads (1 kv)", "memory:    ~", "decode:    ", "dry run: ok"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, r)
		}
	}
	// The vocabulary of the tokenizer is the model's.
	m := regexp.MustCompile(`tokenizer: (\d+) tokens`).FindStringSubmatch(r.stdout)
	if m == nil || !strings.Contains(r.stdout, "vocab "+m[1]+",") {
		t.Errorf("tokenizer and model vocabularies differ:\n%s", r)
	}
	if _, err := os.Stat(runs); err == nil {
		t.Errorf("a dry run wrote %s", runs)
	}
}

func TestTrainSameNameRefused(t *testing.T) {
	run := trainedRun(t)
	cfgPath := filepath.Join(run.dir(), "config.yaml")
	before, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"train", "--run-dir", run.runs, "--run", run.name}, tinyRun...)
	fails(t, []string{"run tiny already has checkpoints", "--resume"}, append(args, "--optim-lr", "0.5")...)
	after, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("a refused start rewrote %s:\nbefore:\n%s\nafter:\n%s", cfgPath, before, after)
	}
	if n := trajectoryCounts(t, filepath.Join(run.dir(), "store.db"))["train"]; n != 4 {
		t.Errorf("a refused start changed the store: %d training trajectories, want 4", n)
	}
}

func TestTrainResume(t *testing.T) {
	run := trainedRun(t)
	// A resumed run takes its saved config: the defaults would give 300
	// training and 100 evaluation questions, the run's own 30 and 10.
	r := ok(t, "train", "--run-dir", run.runs, "--run", run.name, "--resume", "--dry-run")
	if !strings.Contains(r.stdout, "data:      30 training and 10 evaluation questions") {
		t.Fatalf("resume does not use the run's saved config:\n%s", r) // and resuming would train a default job
	}
	// Settings the checkpoint fixes cannot change on a resume: refused,
	// each named, and config.yaml is left as it was.
	cfgPath := filepath.Join(run.dir(), "config.yaml")
	saved, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	fails(t, []string{"cannot change", "data.synthetic.questions", "model.tiny.hidden"}, "train", "--run-dir", run.runs,
		"--run", run.name, "--resume", "--set", "data.synthetic.questions=80", "--set", "model.tiny.hidden=64")
	if after, _ := os.ReadFile(cfgPath); !bytes.Equal(saved, after) {
		t.Errorf("a refused resume rewrote %s", cfgPath)
	}

	// Resuming a finished run has nothing more to do: it succeeds and adds
	// no trajectory.
	store := filepath.Join(run.dir(), "store.db")
	before := trajectoryCounts(t, store)
	r = ok(t, "train", "--run-dir", run.runs, "--run", run.name, "--resume")
	checkResults(t, r.stdout, "Naive RAG", "Base Tool Call", "RL (grpo)")
	if after := trajectoryCounts(t, store); after["train"] != before["train"] || after["eval"] != before["eval"] {
		t.Errorf("resuming a finished run changed the stored trajectories from %v to %v", before, after)
	}

	// A run that does not exist fails before anything is built or written.
	empty := t.TempDir()
	ghost := append([]string{"train", "--run-dir", empty, "--run", "ghost", "--resume"}, tinyRun...)
	fails(t, []string{"resume ghost", "no checkpoint"}, ghost...)
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("resuming a missing run left %d entries in %s (an index, a log?)", len(ents), empty)
	}
}
