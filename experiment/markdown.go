package experiment

import (
	"fmt"
	"sort"
	"strings"
)

// Markdown renders the table: one row per method, its number of seeds,
// EM per hop count (the mean over seeds), and EM on average and (when
// measured) on the out-of-domain split, each with its 95% interval where
// the per-question outcomes were read (else mean ± sample std over
// seeds); then, where read, how each method searched (Table.Behaviour).
func (t *Table) Markdown() string {
	hops := append([]int(nil), t.Hops...)
	sort.Ints(hops)
	ood := false
	for _, m := range t.Methods {
		if _, ok := t.EM[m]["ood"]; ok {
			ood = true
		}
	}
	var b strings.Builder
	b.WriteString("| Method | Seeds |")
	for _, h := range hops {
		fmt.Fprintf(&b, " %d-hop EM |", h)
	}
	b.WriteString(" Avg EM |")
	if ood {
		b.WriteString(" OOD EM |")
	}
	b.WriteString("\n|---|---:|")
	for range hops {
		b.WriteString("---:|")
	}
	b.WriteString("---:|")
	if ood {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, m := range t.Methods {
		fmt.Fprintf(&b, "| %s | %d |", m, t.EM[m]["avg"].N)
		for _, h := range hops {
			if c, ok := t.EM[m][fmt.Sprintf("hop%d", h)]; ok {
				fmt.Fprintf(&b, " %.3f |", c.Mean)
			} else {
				b.WriteString(" – |")
			}
		}
		fmt.Fprintf(&b, " %s |", t.EM[m]["avg"])
		if ood {
			fmt.Fprintf(&b, " %s |", t.EM[m]["ood"])
		}
		b.WriteString("\n")
	}
	if len(t.Behaviour) > 0 {
		b.WriteString("\nHow each searched, on the in-domain test episodes of its final evaluation (mean over seeds; naive RAG's " +
			"search is the harness's): search calls per episode; the shares of multi-hop (2- and 3-hop) episodes that searched " +
			"once, twice, three times or more; the share of the multi-hop episodes' supporting passages their searches " +
			"retrieved (evidence); the share of episodes whose answer a search result of theirs contained; the share with no search.\n\n")
		b.WriteString("| Method | Searches | Multi-hop: 1 / 2 / 3+ searches | Multi-hop evidence | Answer in a result | No search |\n" +
			"|---|---:|---|---:|---:|---:|\n")
		for _, m := range t.Methods {
			x, ok := t.Behaviour[m]
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "| %s | %.2f | %.1f%% / %.1f%% / %.1f%% | %.1f%% | %.1f%% | %.1f%% |\n", m, x.Searches, 100*x.MultiHop1,
				100*x.MultiHop2, 100*x.MultiHop3, 100*x.Evidence, 100*x.AnswerInResult, 100*x.NoSearch)
		}
	}
	return b.String()
}

// String renders a cell as "mean [lo, hi]" with its interval, else as
// "mean ± std" (three decimals).
func (c Cell) String() string {
	if c.N == 0 {
		return "–"
	}
	if c.Interval != nil {
		return fmt.Sprintf("%.3f [%.3f, %.3f]", c.Mean, c.Interval.Lo, c.Interval.Hi)
	}
	if c.N == 1 {
		return fmt.Sprintf("%.3f", c.Mean)
	}
	return fmt.Sprintf("%.3f ± %.3f", c.Mean, c.Std)
}
