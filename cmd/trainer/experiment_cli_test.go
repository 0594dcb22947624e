package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/experiment"
)

// `trainer experiment paper` end to end at the tiny size: one warm start
// and one run per row for each of 2 seeds, then docs/results.md's form:
// the table with its out-of-domain column (2 baselines + 8 RL rows), the
// curves, and the claims checked seed by seed (4 algorithms reaching 2.5x
// naive RAG, base tool call below naive RAG, 3 ablations, with the rows
// of experiment.PaperSpecs as they stand).
func TestExperimentPaperTiny(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "docs", "results.md")
	args := append([]string{"experiment", "paper", "--seeds", "1,2", "--run-dir", filepath.Join(dir, "runs"), "--out", out}, tinyRun...)
	args = append(args, "--iterations", "2", "--set", "data.synthetic.ood_questions=4")
	r := ok(t, args...)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	for _, want := range []string{"| Method | 1-hop EM | 2-hop EM | Avg EM | OOD EM |", "| Naive RAG |", "| Base Tool Call |",
		"| PPO λ=0.95 w/o advantage mask |", "![eval_ood_em](results_curves/compare_eval_ood_em.png)", "## Claims, checked seed by seed",
		"- PPO reaches 2.5x naive RAG", "- Base Tool Call is below Naive RAG", "- PPO is ahead of PPO w/o loss mask",
		"- PPO λ=0.95 is ahead of PPO λ=0.95 w/o advantage mask", "With 2 seeds"} {
		if !strings.Contains(md, want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
	// Every row of the table: the 2 baselines and the RL rows; every claim:
	// one per algorithm row, one for the base tool call, one per ablation.
	claims := 1
	for _, s := range experiment.PaperSpecs {
		if !strings.Contains(md, "| "+s.Name+" |") {
			t.Errorf("results.md has no row %q", s.Name)
		}
		if s.Algorithm {
			claims++
		}
		if s.Ablates != "" {
			claims++
		}
	}
	cells := 0
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| ") {
			cells += strings.Count(l, " ± ")
		}
	}
	if want := (2 + len(experiment.PaperSpecs)) * 4; cells != want {
		t.Errorf("%d mean ± std cells, want %d (rows x 1-hop, 2-hop, Avg, OOD):\n%s", cells, want, md)
	}
	if n := strings.Count(md, "\n- ") - 6; n != claims { // 6 bullets describe the run
		t.Errorf("%d claims, want %d:\n%s", n, claims, md)
	}
	if !strings.Contains(r.stdout, "| OOD EM |") {
		t.Errorf("stdout lacks the table:\n%s", r)
	}
}
