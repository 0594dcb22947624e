package experiment

import (
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/internal/stat"
	"github.com/agentrl/agentrl/trainer/results"
)

// RLOverRAG is the factor by which every RL algorithm should beat naive
// RAG's average EM (the paper's weakest RL algorithm is 2.5x naive RAG).
const RLOverRAG = 2.5

// ProcessOverBase is the factor by which a row with process rewards should
// beat the base tool-calling model's multi-hop EM (amendment 11).
const ProcessOverBase = 2

// The paired bootstrap of every claim: its resamples and its generator's
// seed (fixed, so that results.md regenerates identically).
const (
	BootstrapResamples = 10000
	BootstrapSeed      = 44
)

// Claim is one of the paper's claims, tested on the per-question outcomes
// of two rows over the seeds both have: the mean over seeds of each
// seed's mean of A − C·B over its questions (positive where A is ahead),
// its paired-bootstrap 95% interval, and the per-seed means.
type Claim struct {
	Text     string
	Split    string // results.SplitInDomain or results.SplitOOD
	A, B     string
	C        float64
	Seeds    []int
	PerSeed  []float64
	Interval stat.Interval
	N        int // questions, over all seeds where Nested, else per seed
	// Nested is true where each seed has its own questions (Table.Nested):
	// the bootstrap then resamples each seed's questions apart.
	Nested bool
}

// Verdict is "holds", "fails" or "undecided" at the claim's power (its
// interval's side of 0).
func (c Claim) Verdict() string { return c.Interval.Verdict() }

// Ahead is the number of seeds whose mean difference is positive (for a
// factor claim, not negative).
func (c Claim) Ahead() int {
	n := 0
	for _, d := range c.PerSeed {
		if d > 0 || c.C != 1 && d == 0 {
			n++
		}
	}
	return n
}

// Claims tests the paper's claims (docs/experiments.md, the protocol):
// each Algorithm row is above naive RAG, and reaches RLOverRAG times it,
// on the in-domain split; the base tool-calling model is below naive
// RAG; each row that Ablates another is behind it; each Algorithm row is
// above naive RAG out of domain; each Process row is above naive RAG and
// the base tool-calling model in-domain, reaches ProcessOverBase times the
// base's multi-hop EM, and is not below naive RAG out of domain. A claim
// whose rows lack outcomes is left out.
func (t *Table) Claims() ([]Claim, error) {
	var out []Claim
	add := func(text, split, a, b string, c float64) error {
		cl, ok, err := t.claim(text, split, a, b, c)
		if ok {
			out = append(out, cl)
		}
		return err
	}
	in, ood := results.SplitInDomain, results.SplitOOD
	for _, s := range PaperSpecs {
		if !s.Algorithm {
			continue
		}
		if err := add(s.Name+" is above naive RAG in-domain", in, s.Name, results.NaiveRAG, 1); err != nil {
			return nil, err
		}
		if err := add(fmt.Sprintf("%s reaches %.1fx naive RAG in-domain (%s − %.1f × Naive RAG)", s.Name, RLOverRAG, s.Name, RLOverRAG), in, s.Name, results.NaiveRAG, RLOverRAG); err != nil {
			return nil, err
		}
	}
	if err := add("Base Tool Call is below Naive RAG in-domain (Naive RAG − Base Tool Call)", in, results.NaiveRAG, results.BaseToolCall, 1); err != nil {
		return nil, err
	}
	for _, s := range PaperSpecs {
		if s.Ablates == "" {
			continue
		}
		if err := add(fmt.Sprintf("%s is ahead of %s in-domain", s.Ablates, s.Name), in, s.Ablates, s.Name, 1); err != nil {
			return nil, err
		}
	}
	for _, s := range PaperSpecs {
		if !s.Algorithm {
			continue
		}
		if err := add(s.Name+" is above naive RAG out of domain", ood, s.Name, results.NaiveRAG, 1); err != nil {
			return nil, err
		}
	}
	for _, s := range PaperSpecs {
		if !s.Process {
			continue
		}
		for _, c := range []struct {
			text, split, b string
			c              float64
		}{
			{s.Name + " is above naive RAG in-domain", in, results.NaiveRAG, 1},
			{s.Name + " is above Base Tool Call in-domain", in, results.BaseToolCall, 1},
			{fmt.Sprintf("%s reaches %dx Base Tool Call's multi-hop EM (%s − %d × Base Tool Call, 2- and 3-hop questions)",
				s.Name, ProcessOverBase, s.Name, ProcessOverBase), results.SplitMultiHop, results.BaseToolCall, ProcessOverBase},
			{s.Name + " is not below naive RAG out of domain (fails only when its interval is below 0)", ood, results.NaiveRAG, 1},
		} {
			if err := add(c.text, c.split, s.Name, c.b, c.c); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// claim tests one claim over the seeds both rows have; ok is false when
// they share none.
func (t *Table) claim(text, split, a, b string, c float64) (Claim, bool, error) {
	cl := Claim{Text: text, Split: split, A: a, B: b, C: c, Nested: t.Nested[split]}
	var d [][]float64
	for _, s := range t.Seeds {
		ya, okA := t.Outcomes[a][split][s]
		yb, okB := t.Outcomes[b][split][s]
		if !okA || !okB {
			continue
		}
		if len(ya) != len(yb) {
			return cl, false, fmt.Errorf("claim %q, seed %d: %d questions against %d", text, s, len(ya), len(yb))
		}
		row := make([]float64, len(ya))
		sum := 0.0 // summed before dividing: exact for 0/1 outcomes, so a tie is 0, not a rounding error
		for q := range row {
			row[q] = ya[q] - c*yb[q]
			sum += row[q]
		}
		d = append(d, row)
		cl.Seeds = append(cl.Seeds, s)
		cl.PerSeed = append(cl.PerSeed, sum/float64(len(row)))
	}
	if len(d) == 0 {
		return cl, false, nil
	}
	bootstrap, n := stat.PairedBootstrap, len(d[0])
	if cl.Nested {
		bootstrap, n = stat.NestedBootstrap, 0
		for _, row := range d {
			n += len(row)
		}
	}
	iv, err := bootstrap(d, BootstrapResamples, BootstrapSeed)
	if err != nil {
		return cl, false, fmt.Errorf("claim %q: %w", text, err)
	}
	cl.Interval, cl.N = iv, n
	return cl, true, nil
}

// Markdown renders a claim as one list item: the mean difference and its
// 95% interval, the verdict, and the per-seed differences.
func (c Claim) Markdown() string {
	vals := make([]string, len(c.PerSeed))
	for i, d := range c.PerSeed {
		vals[i] = fmt.Sprintf("%+.3f", d)
	}
	seeds := make([]string, len(c.Seeds))
	for i, s := range c.Seeds {
		seeds[i] = fmt.Sprint(s)
	}
	test := fmt.Sprintf("paired bootstrap, %d seeds × %d questions", len(c.Seeds), c.N)
	if c.Nested {
		test = fmt.Sprintf("paired two-stage bootstrap, %d seeds, %d questions, each seed's its own", len(c.Seeds), c.N)
	}
	return fmt.Sprintf("%s: %+.3f [%+.3f, %+.3f] (%s): **%s**. Per seed (%s): %s; ahead in %d of %d.",
		c.Text, c.Interval.Mean, c.Interval.Lo, c.Interval.Hi, test, c.Verdict(), strings.Join(seeds, ", "),
		strings.Join(vals, ", "), c.Ahead(), len(c.PerSeed))
}
