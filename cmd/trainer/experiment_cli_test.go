package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/experiment"
	"github.com/agentrl/agentrl/trainer/store"
)

// `trainer experiment paper` end to end at the tiny size: one warm start
// and one run per row for each of 2 seeds, then docs/results.md's form:
// the table with its seeds and out-of-domain columns (2 baselines + the
// 9 rows that are not Extra), Avg EM and OOD EM with 95% intervals, the
// curves, and the claims, each with its paired test and verdict (per
// algorithm row: above naive RAG, 2.5x naive RAG, above it out of domain;
// base tool call below naive RAG; one per ablation).
func TestExperimentPaperTiny(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "docs", "results.md")
	settings := append(append([]string{}, tinyRun...), "--iterations", "2", "--set", "data.synthetic.ood_questions=4", "--set", "rollout.deterministic=true")
	args := append([]string{"experiment", "paper", "--seeds", "1,2", "--run-dir", filepath.Join(dir, "runs"), "--out", out}, settings...)
	r := ok(t, args...)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{"| Method | Seeds | 1-hop EM | 2-hop EM | Avg EM | OOD EM |", "| Naive RAG | 2 |", "| Base Tool Call | 2 |",
		"| PPO λ=0.95 w/o advantage mask | 2 |", "![eval_ood_em](results_curves/compare_eval_ood_em.png)", "## Claims, each with a paired test",
		"- PPO is above naive RAG in-domain: ", "- PPO reaches 2.5x naive RAG", "- Base Tool Call is below Naive RAG", "- PPO is ahead of PPO w/o loss mask",
		"- PPO λ=0.95 is ahead of PPO λ=0.95 w/o advantage mask", "- RLOO is above naive RAG out of domain", "(paired bootstrap, 2 seeds × 4 questions)",
		"- PPO + process rewards is above Base Tool Call in-domain", "- PPO + process rewards reaches 2x Base Tool Call's multi-hop EM"} {
		if !strings.Contains(md, want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "GiGPO") {
		t.Errorf("results.md has the extra rows without --extra:\n%s", md)
	}
	rows, claims := 0, 1
	for _, s := range experiment.PaperSpecs {
		if s.Extra {
			continue
		}
		rows++
		if !strings.Contains(md, "| "+s.Name+" |") {
			t.Errorf("results.md has no row %q", s.Name)
		}
		if s.Algorithm {
			claims += 3
		}
		if s.Ablates != "" {
			claims++
		}
		if s.Process {
			claims += 4 // above naive RAG and the base in-domain, 2x the base's multi-hop EM, out of domain
		}
	}
	cells := 0
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| ") {
			cells += strings.Count(l, "] |")
		}
	}
	if want := (2 + rows) * 2; cells != want {
		t.Errorf("%d cells with an interval, want %d (rows x Avg, OOD):\n%s", cells, want, md)
	}
	verdicts := -3 // the paragraph above the claims names each verdict once
	for _, v := range []string{"**holds**", "**fails**", "**undecided**"} {
		verdicts += strings.Count(md, v)
	}
	if n := strings.Count(md, "\n- ") - 7; n != claims || verdicts != claims { // 7 bullets describe the run
		t.Errorf("%d claims with %d verdicts, want %d:\n%s", n, verdicts, claims, md)
	}
	if !strings.Contains(r.stdout, "| OOD EM |") {
		t.Errorf("stdout lacks the table:\n%s", r)
	}
	// --resume keeps the finished warm starts and runs: nothing is
	// trained again, and the table is the same.
	store := filepath.Join(dir, "runs", "paper-ppo-s2", "store.db")
	before, err := os.Stat(store)
	if err != nil {
		t.Fatal(err)
	}
	again := ok(t, append(args, "--resume")...)
	after, err := os.Stat(store)
	if err != nil {
		t.Fatal(err)
	}
	if !after.ModTime().Equal(before.ModTime()) || again.stdout != r.stdout {
		t.Errorf("--resume retrained (store %v -> %v) or changed the table:\n%s\nthen\n%s", before.ModTime(), after.ModTime(), r.stdout, again.stdout)
	}
	// --resume keeps a finished run only when its stored config is the one
	// this call would train: with another run.iterations and optim.lr it
	// refuses, naming the first run it checks (seed 1's warm start) and
	// exactly those keys, before anything trains.
	fails(t, []string{"resume: run paper-sft-s1 finished with another config than this call's (run.iterations, optim.lr differ)"},
		append(args[:len(args):len(args)], "--resume", "--set", "run.iterations=3", "--set", "optim.lr=0.5")...)
	if after, err := os.Stat(store); err != nil || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("a refused --resume touched %s (%v)", store, err)
	}
	// A seed given twice is refused by name before anything trains
	// (training on seeds 1,1 redid the warm start and panicked; --collect
	// counted one run as two seeds).
	at := []string{"experiment", "paper", "--run-dir", filepath.Join(dir, "runs"), "--out", filepath.Join(dir, "twice.md")}
	for _, c := range []struct {
		want  string
		flags []string
	}{
		{"--seeds: 1 is given twice", append([]string{"--seeds", "1,1"}, settings...)},
		{"--other-seeds: 2 is given twice", append([]string{"--seeds", "1,2", "--other-seeds", "2,2"}, settings...)},
		{"--seeds: 2 is given twice", []string{"--seeds", "2,2", "--other-seeds", "2", "--collect"}},
	} {
		fails(t, []string{c.want}, append(at[:len(at):len(at)], c.flags...)...)
	}
	// --jobs 2 trains two runs at once in the process and changes no
	// figure: every run's trajectories, token for token and logprob for
	// logprob, are those of the runs made one after the other.
	dir2 := t.TempDir()
	args2 := append([]string{"experiment", "paper", "--seeds", "1,2", "--run-dir", filepath.Join(dir2, "runs"), "--out", filepath.Join(dir2, "results.md"), "--jobs", "2"}, settings...)
	ok(t, args2...)
	runs, err := filepath.Glob(filepath.Join(dir, "runs", "paper-*", "store.db"))
	if err != nil || len(runs) != 2*(rows+1) {
		t.Fatalf("%d stores (%v), want %d", len(runs), err, 2*(rows+1))
	}
	for _, one := range runs {
		rel, _ := filepath.Rel(dir, one)
		if strings.Contains(rel, "paper-sft-") { // a warm start: its weights
			sft := filepath.Join(filepath.Dir(rel), "sft", "model.safetensors")
			if a, b := readFile(t, filepath.Join(dir, sft)), readFile(t, filepath.Join(dir2, sft)); !bytes.Equal(a, b) {
				t.Errorf("%s: --jobs 2 changed the warm start", sft)
			}
			continue
		}
		a, b := trajectoryTokens(t, one), trajectoryTokens(t, filepath.Join(dir2, rel))
		if len(a) == 0 || !slices.Equal(a, b) {
			t.Errorf("%s: --jobs 2 changed the run (%d trajectories, %d with --jobs 2)", rel, len(a), len(b))
		}
	}
	fails(t, []string{"--jobs 2 with rollout.max_staleness 1"}, append(args2[:len(args2):len(args2)], "--set", "rollout.max_staleness=1")...)
	fails(t, []string{"--jobs 0: want 1 or more"}, append(args[:len(args):len(args)], "--jobs", "0")...)
}

// --world-seeds gives each seed its own world: every run of seed 1, its
// warm start's included, trains and is evaluated on world 11's questions,
// seed 2's on world 12's, and results.md says so and tests the claims with
// the two-stage bootstrap. A list of the wrong length, or a world seed
// where the data are files, is refused by name.
func TestExperimentPaperWorlds(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "results.md")
	args := append([]string{"experiment", "paper", "--seeds", "1,2", "--other-seeds", "1", "--world-seeds", "11,12",
		"--run-dir", filepath.Join(dir, "runs"), "--out", out}, tinyRun...)
	ok(t, append(args, "--set", "data.synthetic.ood_questions=4")...)
	md := string(readFile(t, out))
	for _, want := range []string{"- each seed has its own world (--world-seeds)", "mean of the seed means",
		"(paired two-stage bootstrap, 2 seeds, 8 questions, each seed's its own)", "(paired two-stage bootstrap, 1 seeds, 4 questions, each seed's its own)"} {
		if !strings.Contains(md, want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
	for run, world := range map[string]string{"paper-sft-s1": "11", "paper-ppo-s1": "11", "paper-sft-s2": "12", "paper-grpo-s2": "12"} {
		path := filepath.Join(dir, "runs", run, "store.db")
		_, rows, err := store.QueryReadOnly(path, "SELECT json_extract(config, '$.Data.Synthetic.Seed') FROM runs")
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || fmt.Sprint(rows[0][0]) != world {
			t.Errorf("%s: data.synthetic.seed %v, want %s", run, rows, world)
		}
		if strings.Contains(run, "sft") {
			continue // a warm start stores no trajectories
		}
		_, rows, err = store.QueryReadOnly(path, "SELECT DISTINCT substr(task_id, 1, instr(substr(task_id, 7), '-') + 5) FROM trajectories")
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || fmt.Sprint(rows[0][0]) != "synth-"+world {
			t.Errorf("%s: questions of worlds %v, want only synth-%s", run, rows, world)
		}
	}
	// --collect rebuilds the same table and claims from the stores alone:
	// each seed's own questions are read from them, not from the flag,
	// which it refuses, as it refuses the other flags of training.
	again := filepath.Join(dir, "again.md")
	collect := []string{"experiment", "paper", "--seeds", "1,2", "--other-seeds", "1", "--run-dir", filepath.Join(dir, "runs"), "--out", again, "--collect"}
	ok(t, collect...)
	// the table and the claims (the curves' folder follows --out)
	claims := func(md string) string {
		return md[strings.Index(md, "| Method |"):strings.Index(md, "Training curves")] + md[strings.Index(md, "## Claims"):]
	}
	if a, b := claims(md), claims(string(readFile(t, again))); a != b {
		t.Errorf("--collect rebuilt another table:\n%s\nthen\n%s", a, b)
	}
	for _, flag := range [][]string{{"--world-seeds", "11,12"}, {"--jobs", "2"}, {"--resume"}} {
		fails(t, []string{flag[0] + " with --collect"}, append(collect[:len(collect):len(collect)], flag...)...)
	}
	// Config flags --collect does not read are refused by name, as given
	// (even at their default) or through --set, rather than written into
	// the results' command line; where the runs are and how to log are
	// read.
	fails(t, []string{"--run-iterations, --optim-lr, algorithm.clip_high with --collect"},
		append(collect[:len(collect):len(collect)], "--iterations", "3", "--optim-lr", "1e-4", "--set", "algorithm.clip_high=0.3")...)
	ok(t, append(collect[:len(collect):len(collect)], "--logging-level", "warn")...)
	fails(t, []string{"--world-seeds: 11 is given twice"}, append(args[:len(args):len(args)], "--world-seeds", "11,11")...)
	fails(t, []string{"--world-seeds has 1 entries for 2 --seeds"}, append(args[:len(args):len(args)], "--world-seeds", "11")...)
	fails(t, []string{"--world-seeds with data.source files"}, append(args[:len(args):len(args)], "--set", "data.source=files", "--set", "data.train=x.jsonl")...)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// trajectoryTokens is every trajectory of the store at path, in id order,
// as its id, token ids and logprobs.
func trajectoryTokens(t *testing.T, path string) []string {
	t.Helper()
	_, rows, err := store.QueryReadOnly(path, "SELECT t.id, hex(k.ids), hex(k.logprobs) FROM trajectories t JOIN trajectory_tokens k USING (tid) ORDER BY t.id")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprint(r...))
	}
	return out
}
