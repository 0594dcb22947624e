package experiment

import (
	"math"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/trainer/config"
)

// Mean and sample standard deviation by hand: {0.7, 0.8, 0.9} has mean 0.8
// and sample variance (0.01 + 0 + 0.01)/2 = 0.01, std 0.1.
func TestMeanStd(t *testing.T) {
	c := meanStd([]float64{0.7, 0.8, 0.9})
	if math.Abs(c.Mean-0.8) > 1e-12 || math.Abs(c.Std-0.1) > 1e-12 || c.N != 3 || len(c.Values) != 3 {
		t.Fatalf("%+v", c)
	}
	if one := meanStd([]float64{0.5}); one.Std != 0 || one.String() != "0.500" {
		t.Fatalf("one seed: %+v %q", one, one.String())
	}
	if c.String() != "0.800 ± 0.100" {
		t.Fatalf("cell renders as %q", c.String())
	}
}

func TestRunNames(t *testing.T) {
	for in, want := range map[string]string{"REINFORCE++": "paper-reinforcepp-s2", "PPO w/o loss mask": "paper-ppo-w-o-loss-mask-s2", "sft": "paper-sft-s2",
		"PPO λ=0.95 w/o advantage mask": "paper-ppo-lambda-0-95-w-o-advantage-mask-s2"} {
		if got := runName(in, 2); got != want {
			t.Fatalf("runName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMarkdownTable(t *testing.T) {
	tab := &Table{Methods: []string{"GRPO"}, Hops: []int{2, 1}, EM: map[string]map[string]Cell{
		"GRPO": {"hop1": meanStd([]float64{1}), "hop2": meanStd([]float64{0.5, 0.7}), "avg": meanStd([]float64{0.75})}}}
	md := tab.Markdown()
	for _, want := range []string{"| Method | 1-hop EM | 2-hop EM | Avg EM |", "| GRPO | 1.000 | 0.600 ± 0.141 | 0.750 |"} {
		if !strings.Contains(md, want) {
			t.Fatalf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// Every row's overrides apply to the default config and give a valid run;
// the paper's rows are there with their estimator, masks and lambda; an
// ablation names an earlier row; the first run of a seed evaluates the
// baselines, the others do not.
func TestSpecConfigs(t *testing.T) {
	type want struct {
		est            string
		advMask, lMask bool
		lambda         float64
	}
	wants := map[string]want{
		"PPO":                           {"gae", true, true, 1},
		"GRPO":                          {"grpo", true, true, 1},
		"REINFORCE++":                   {"reinforce_pp", true, true, 1},
		"RLOO":                          {"rloo", true, true, 1},
		"PPO w/o advantage mask":        {"gae", false, true, 1},
		"PPO w/o loss mask":             {"gae", true, false, 1},
		"PPO λ=0.95":                    {"gae", true, true, 0.95},
		"PPO λ=0.95 w/o advantage mask": {"gae", false, true, 0.95},
	}
	names := map[string]bool{}
	for i, s := range PaperSpecs {
		names[s.Name] = true
		c, err := specConfig(config.Default(), s, 3, "runs/sft", i == 0)
		if err != nil {
			t.Fatal(err)
		}
		a := c.Algorithm
		if w, ok := wants[s.Name]; ok && (a.Estimator != w.est || a.AdvantageMask != w.advMask || a.LossMask != w.lMask || a.Lambda != w.lambda) {
			t.Errorf("%s: estimator %s, advantage mask %v, loss mask %v, lambda %v; want %+v", s.Name, a.Estimator, a.AdvantageMask, a.LossMask, a.Lambda, w)
		}
		if c.Run.Seed != 3 || c.Model.Path != "runs/sft" || c.Eval.Baselines != (i == 0) || c.Run.Name != runName(s.Name, 3) {
			t.Errorf("%s: run %+v, model %q, baselines %v", s.Name, c.Run, c.Model.Path, c.Eval.Baselines)
		}
		if s.Ablates != "" && !names[s.Ablates] {
			t.Errorf("%s ablates %q, not an earlier row", s.Name, s.Ablates)
		}
	}
	for name := range wants {
		if !names[name] {
			t.Errorf("no row %q", name)
		}
	}
	bad := Spec{Name: "broken", Set: []string{"algorithm.no_such_key=1"}}
	if _, err := specConfig(config.Default(), bad, 1, "", true); err == nil || !strings.Contains(err.Error(), "row broken") {
		t.Errorf("a row with an unknown key: err = %v", err)
	}
}

func TestMarkdownOODColumn(t *testing.T) {
	tab := &Table{Methods: []string{"Naive RAG", "PPO"}, Hops: []int{1}, EM: map[string]map[string]Cell{
		"Naive RAG": {"hop1": meanStd([]float64{0.2}), "avg": meanStd([]float64{0.2}), "ood": meanStd([]float64{0.05})},
		"PPO":       {"hop1": meanStd([]float64{0.6}), "avg": meanStd([]float64{0.6})}}}
	md := tab.Markdown()
	for _, want := range []string{"| Method | 1-hop EM | Avg EM | OOD EM |", "|---|---:|---:|---:|", "| Naive RAG | 0.200 | 0.200 | 0.050 |", "| PPO | 0.600 | 0.600 | – |"} {
		if !strings.Contains(md, want) {
			t.Fatalf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// The claims, seed by seed, worked by hand over three seeds:
//
//	Naive RAG 0.20 0.10 0.30;  Base Tool Call 0.10 0.15 0.20
//	PPO 0.60 0.30 0.70: PPO − 2.5 × RAG = 0.60−0.50, 0.30−0.25, 0.70−0.75
//	  = +0.10, +0.05, −0.05: holds in 2 of 3 seeds;
//	RAG − Base = +0.10, −0.05, +0.10: 2 of 3;
//	PPO w/o loss mask 0.50 0.30 0.60: PPO − it = +0.10, 0, +0.10: 2 of 3
//	  (a tie is not ahead); mean 0.2/3 = 0.0667, sample std
//	  sqrt(((1/30)^2·2 + (1/15)^2)/2) = sqrt(0.00333) = 0.0577.
func TestClaims(t *testing.T) {
	v := func(xs ...float64) map[string]Cell { return map[string]Cell{"avg": meanStd(xs)} }
	tab := &Table{EM: map[string]map[string]Cell{
		"Naive RAG":         v(0.2, 0.1, 0.3),
		"Base Tool Call":    v(0.1, 0.15, 0.2),
		"PPO":               v(0.6, 0.3, 0.7),
		"PPO w/o loss mask": v(0.5, 0.3, 0.6),
	}}
	cs := tab.Claims()
	if len(cs) != 3 {
		t.Fatalf("%d claims, want 3 (rows without results are left out): %+v", len(cs), cs)
	}
	wantDiffs := [][]float64{{0.1, 0.05, -0.05}, {0.1, -0.05, 0.1}, {0.1, 0, 0.1}}
	for i, c := range cs {
		for j, d := range c.Diffs {
			if math.Abs(d-wantDiffs[i][j]) > 1e-9 {
				t.Errorf("claim %q: diffs %v, want %v", c.Text, c.Diffs, wantDiffs[i])
				break
			}
		}
		if c.Holds() != 2 {
			t.Errorf("claim %q holds in %d seeds, want 2", c.Text, c.Holds())
		}
	}
	if !strings.HasPrefix(cs[0].Text, "PPO reaches 2.5x naive RAG") || !strings.HasPrefix(cs[1].Text, "Base Tool Call is below Naive RAG") ||
		!strings.HasPrefix(cs[2].Text, "PPO is ahead of PPO w/o loss mask") {
		t.Errorf("claims %q, %q, %q", cs[0].Text, cs[1].Text, cs[2].Text)
	}
	md := cs[2].Markdown()
	if !strings.Contains(md, "+0.100, +0.000, +0.100 (mean +0.067 ± 0.058); holds in 2 of 3 seeds.") {
		t.Errorf("claim renders as %q", md)
	}
	// The 2.5x claim holds at equality; the others need a strict lead.
	at := Claim{Diffs: []float64{0}, AtLeast: true}
	if at.Holds() != 1 || (Claim{Diffs: []float64{0}}).Holds() != 0 {
		t.Error("a zero difference: the 2.5x claim holds, a strict claim does not")
	}
	if all := (Claim{Text: "x", Diffs: []float64{0.1, 0.2}}).Markdown(); !strings.HasSuffix(all, "holds in every seed.") {
		t.Errorf("%q", all)
	}
	if none := (Claim{Text: "x", Diffs: []float64{-0.1, -0.2}}).Markdown(); !strings.HasSuffix(none, "holds in no seed.") {
		t.Errorf("%q", none)
	}
}
