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
// seeds).
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
