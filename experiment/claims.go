package experiment

import (
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/internal/stat"
)

// RLOverRAG is the factor by which every RL algorithm should beat naive
// RAG's average EM (the paper's weakest RL algorithm is 2.5x naive RAG).
const RLOverRAG = 2.5

// Claim is one of the paper's claims checked seed by seed on average EM:
// Diffs holds, per seed, a quantity that is positive (or, for AtLeast,
// not negative) where the claim holds.
type Claim struct {
	Text    string
	Diffs   []float64
	AtLeast bool // holds at Diff >= 0 (else Diff > 0)
}

// Holds is the number of seeds in which the claim holds.
func (c Claim) Holds() int {
	n := 0
	for _, d := range c.Diffs {
		if d > 0 || c.AtLeast && d == 0 {
			n++
		}
	}
	return n
}

// Claims checks the paper's claims against the table, on the per-seed
// average EM: each Algorithm row reaches RLOverRAG times naive RAG; the
// base tool-calling model is below naive RAG; each row that Ablates
// another is behind it. A claim whose rows are missing is left out.
func (t *Table) Claims() []Claim {
	avg := func(m string) []float64 { return t.EM[m]["avg"].Values }
	var out []Claim
	rag := avg("Naive RAG")
	for _, s := range PaperSpecs {
		if rl := avg(s.Name); s.Algorithm && len(rl) > 0 && len(rag) > 0 {
			out = append(out, Claim{Text: fmt.Sprintf("%s reaches %.1fx naive RAG (per seed: %s − %.1f × Naive RAG)", s.Name, RLOverRAG, s.Name, RLOverRAG),
				Diffs: combine(rl, rag, func(a, b float64) float64 { return a - RLOverRAG*b }), AtLeast: true})
		}
	}
	if base := avg("Base Tool Call"); len(base) > 0 && len(rag) > 0 {
		out = append(out, Claim{Text: "Base Tool Call is below Naive RAG (per seed: Naive RAG − Base Tool Call)",
			Diffs: combine(rag, base, func(a, b float64) float64 { return a - b })})
	}
	for _, s := range PaperSpecs {
		full, abl := avg(s.Ablates), avg(s.Name)
		if s.Ablates == "" || len(full) == 0 || len(abl) == 0 {
			continue
		}
		out = append(out, Claim{Text: fmt.Sprintf("%s is ahead of %s (per seed: %s − %s)", s.Ablates, s.Name, s.Ablates, s.Name),
			Diffs: combine(full, abl, func(a, b float64) float64 { return a - b })})
	}
	return out
}

// combine applies f seed by seed over the seeds both have.
func combine(a, b []float64, f func(a, b float64) float64) []float64 {
	out := make([]float64, min(len(a), len(b)))
	for i := range out {
		out[i] = f(a[i], b[i])
	}
	return out
}

// Markdown renders a claim as one list item: the per-seed values, their
// mean ± sample std, and in how many seeds it holds.
func (c Claim) Markdown() string {
	vals := make([]string, len(c.Diffs))
	for i, d := range c.Diffs {
		vals[i] = fmt.Sprintf("%+.3f", d)
	}
	mean, std := stat.MeanStd(c.Diffs, 1)
	verdict := "holds in every seed"
	switch h := c.Holds(); {
	case h == 0:
		verdict = "holds in no seed"
	case h < len(c.Diffs):
		verdict = fmt.Sprintf("holds in %d of %d seeds", h, len(c.Diffs))
	}
	return fmt.Sprintf("%s: %s (mean %+.3f ± %.3f); %s.", c.Text, strings.Join(vals, ", "), mean, std, verdict)
}
