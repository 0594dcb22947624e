package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The shared run stores 16 trajectories: 4 training ones (1 iteration x 2
// prompts x 2 samples) and 12 evaluation ones: at iteration 0 the two
// baselines (Base Tool Call and Naive RAG) on the 4 evaluation questions,
// at iteration 1 (the end) the trained policy on the same 4.

// listRow is one row of rollouts list.
type listRow struct {
	id, split string
	iteration int
}

// listRows parses rollouts list's table.
func listRows(t *testing.T, out string) []listRow {
	t.Helper()
	ls := lines(out)
	if len(ls) == 0 || !strings.HasPrefix(ls[0], "ID") {
		t.Fatalf("rollouts list header:\n%s", out)
	}
	var rows []listRow
	for _, l := range ls[1:] {
		f := strings.Fields(l)
		if len(f) < 10 {
			t.Fatalf("rollouts list row %q", l)
		}
		it, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("rollouts list row %q: %v", l, err)
		}
		rows = append(rows, listRow{id: f[0], iteration: it, split: f[2]})
	}
	return rows
}

func TestRolloutsList(t *testing.T) {
	run := trainedRun(t)
	at := []string{"--run-dir", run.runs, "--run", run.name}
	list := func(args ...string) []listRow {
		return listRows(t, ok(t, append(append([]string{"rollouts", "list"}, at...), args...)...).stdout)
	}

	all := list()
	if len(all) != 16 {
		t.Fatalf("%d rows, want 16", len(all))
	}
	for i := 1; i < len(all); i++ {
		if all[i].iteration > all[i-1].iteration {
			t.Fatalf("not newest iteration first: %v", all)
		}
	}
	if all[0].iteration != 1 {
		t.Errorf("first row from iteration %d, want the newest, 1", all[0].iteration)
	}

	train := list("--split", "train")
	if len(train) != 4 {
		t.Errorf("--split train: %d rows, want 4", len(train))
	}
	for _, r := range train {
		if r.split != "train" || r.iteration != 1 {
			t.Errorf("--split train row %+v", r)
		}
	}
	if n := len(list("--iteration", "0", "--split", "eval")); n != 8 {
		t.Errorf("--iteration 0 --split eval: %d rows, want 8", n)
	}
	if n := len(list("--where", "split = 'eval' AND iteration = 1")); n != 4 {
		t.Errorf("--where: %d rows, want 4", n)
	}
	limited := list("--limit", "3")
	if len(limited) != 3 {
		t.Fatalf("--limit 3: %d rows", len(limited))
	}
	for _, r := range limited {
		if r.iteration != 1 {
			t.Errorf("--limit 3 keeps the newest rows, got %+v", r)
		}
	}

	fails(t, []string{`--split "bogus"`, "train or eval"}, append([]string{"rollouts", "list", "--split", "bogus"}, at...)...)
	fails(t, []string{"bogus_col"}, append([]string{"rollouts", "list", "--where", "bogus_col = 1"}, at...)...)
	fails(t, []string{filepath.Join(run.runs, "ghost", "store.db")}, "rollouts", "list", "--run-dir", run.runs, "--run", "ghost")
}

func TestRolloutsShow(t *testing.T) {
	run := trainedRun(t)
	store := filepath.Join(run.dir(), "store.db")
	id := listRows(t, ok(t, "rollouts", "list", "--store", store, "--split", "train", "--limit", "1").stdout)[0].id

	r := ok(t, "rollouts", "show", "--store", store, id)
	for _, want := range []string{"== trajectory " + id + ": iteration 1, train", "question: ", "gold: ", "-- turn 1/", "stop: ", "tokens: "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("show lacks %q:\n%s", want, r)
		}
	}
	// The question shown is the stored one.
	q := lines(ok(t, "rollouts", "sql", "--store", store, "SELECT question FROM trajectories WHERE id = '"+id+"'").stdout)
	if len(q) != 2 || !strings.Contains(r.stdout, "question: "+strings.TrimSpace(q[1])) {
		t.Errorf("show's question differs from the store's %v:\n%s", q, r)
	}

	// --mask groups the tokens by mask bit. The groups partition the
	// trajectory: the first (bit 0) is the prompt, the bit-1 groups add up
	// to the action tokens and all groups to the total.
	r = ok(t, "rollouts", "show", "--store", store, "--mask", id)
	m := regexp.MustCompile(`tokens: (\d+) prompt, (\d+) total, (\d+) action`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no token counts in:\n%s", r)
	}
	prompt, total, action := atoi(t, m[1]), atoi(t, m[2]), atoi(t, m[3])
	groups := regexp.MustCompile(`(?m)^\[([01])\] (\d+) tokens: `).FindAllStringSubmatch(r.stdout, -1)
	if len(groups) < 2 || groups[0][1] != "0" || atoi(t, groups[0][2]) != prompt {
		t.Fatalf("mask groups %v: want the prompt (%d tokens, bit 0) first", groups, prompt)
	}
	sum, sum1 := 0, 0
	for _, g := range groups {
		sum += atoi(t, g[2])
		if g[1] == "1" {
			sum1 += atoi(t, g[2])
		}
	}
	if sum != total || sum1 != action {
		t.Errorf("mask groups add up to %d tokens (%d with bit 1), want %d (%d)", sum, sum1, total, action)
	}
	counts := lines(ok(t, "rollouts", "sql", "--store", store,
		"SELECT prompt_tokens || ',' || total_tokens || ',' || action_tokens FROM trajectories WHERE id = '"+id+"'").stdout)
	if want := m[1] + "," + m[2] + "," + m[3]; len(counts) != 2 || strings.TrimSpace(counts[1]) != want {
		t.Errorf("stored counts %v, shown %s", counts, want)
	}

	fails(t, []string{"no-such-id", "not found"}, "rollouts", "show", "--store", store, "no-such-id")
	fails(t, []string{"give one trajectory ID"}, "rollouts", "show", "--store", store)
	// A --tokenizer that does not load is refused, as trainer inspect
	// refuses it, not passed over for the ids.
	nosuch := filepath.Join(t.TempDir(), "nosuch")
	fails(t, []string{"--tokenizer " + nosuch, "tokenizer.json"}, "rollouts", "show", "--store", store, "--mask", "--tokenizer", nosuch, id)
	// --store takes the run's folder too; a store given as an argument is
	// refused, naming --store.
	if r := ok(t, "rollouts", "show", "--store", run.dir(), id); !strings.Contains(r.stdout, "== trajectory "+id) {
		t.Errorf("show --store %s lacks the trajectory:\n%s", run.dir(), r)
	}
	fails(t, []string{`unexpected argument "` + store + `"`, "--store " + store}, "rollouts", "list", store)
}

func TestRolloutsSQL(t *testing.T) {
	run := trainedRun(t)
	store := filepath.Join(run.dir(), "store.db")
	r := ok(t, "rollouts", "sql", "--store", store, "SELECT split, COUNT(*) AS n FROM trajectories GROUP BY split ORDER BY split")
	got := lines(r.stdout)
	want := [][]string{{"split", "n"}, {"eval", "12"}, {"train", "4"}}
	if len(got) != len(want) {
		t.Fatalf("query output:\n%s", r)
	}
	for i, l := range got {
		if f := strings.Fields(l); strings.Join(f, " ") != strings.Join(want[i], " ") {
			t.Errorf("line %d = %q, want %v", i, l, want[i])
		}
	}
	r = ok(t, "rollouts", "sql", "--store", store, "SELECT split, n FROM reward_by_iteration WHERE iteration = 0")
	if got := lines(r.stdout); len(got) != 2 || strings.Join(strings.Fields(got[1]), " ") != "eval 8" {
		t.Errorf("reward_by_iteration at iteration 0:\n%s", r)
	}

	for _, q := range []string{"DELETE FROM trajectories", "DROP TABLE turns"} {
		fails(t, []string{"refused", "read-only"}, "rollouts", "sql", "--store", store, q)
	}
	if c := trajectoryCounts(t, store); c["train"] != 4 || c["eval"] != 12 {
		t.Errorf("trajectories after refused writes %v, want 4 train and 12 eval", c)
	}
	fails(t, []string{"no such table: nope"}, "rollouts", "sql", "--store", store, "SELECT * FROM nope")
	fails(t, []string{"give a QUERY"}, "rollouts", "sql", "--store", store)
	fails(t, []string{"/nonexistent.db"}, "rollouts", "sql", "--store", "/nonexistent.db", "SELECT 1")
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The inspection commands open a store read-only: pointed at a search
// index (an SQLite file that is not a store) they refuse it, saying so,
// and leave it byte-identical with nothing created beside it.
func TestRolloutsRefuseIndexUnchanged(t *testing.T) {
	run := trainedRun(t)
	orig, err := os.ReadFile(filepath.Join(run.dir(), "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(t.TempDir(), "index.db")
	if err := os.WriteFile(index, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"rollouts", "list", "--store", index},
		{"rollouts", "show", "--store", index, "0-train-0-0"},
		{"rollouts", "sql", "--store", index, "SELECT 1"},
		{"report", "--out", t.TempDir(), "--store", index},
	} {
		fails(t, []string{index, "not an agentrl trajectory store"}, args...)
		got, err := os.ReadFile(index)
		if err != nil || !bytes.Equal(got, orig) {
			t.Fatalf("trainer %s changed the index (%v)", strings.Join(args, " "), err)
		}
		if ents, _ := os.ReadDir(filepath.Dir(index)); len(ents) != 1 {
			t.Fatalf("trainer %s created files beside the index: %d entries", strings.Join(args, " "), len(ents))
		}
	}
}
