package experiment

import (
	"fmt"
	"sort"
	"strings"
)

// Markdown renders the table: one row per method, EM per hop count, on
// average and (when measured) on the out-of-domain split, as mean ± sample
// std over seeds.
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
	b.WriteString("| Method |")
	for _, h := range hops {
		fmt.Fprintf(&b, " %d-hop EM |", h)
	}
	b.WriteString(" Avg EM |")
	if ood {
		b.WriteString(" OOD EM |")
	}
	b.WriteString("\n|---|")
	for range hops {
		b.WriteString("---:|")
	}
	b.WriteString("---:|")
	if ood {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, m := range t.Methods {
		fmt.Fprintf(&b, "| %s |", m)
		for _, h := range hops {
			fmt.Fprintf(&b, " %s |", t.EM[m][fmt.Sprintf("hop%d", h)])
		}
		fmt.Fprintf(&b, " %s |", t.EM[m]["avg"])
		if ood {
			fmt.Fprintf(&b, " %s |", t.EM[m]["ood"])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// String renders a cell as "mean ± std" (three decimals).
func (c Cell) String() string {
	if c.N == 0 {
		return "–"
	}
	if c.N == 1 {
		return fmt.Sprintf("%.3f", c.Mean)
	}
	return fmt.Sprintf("%.3f ± %.3f", c.Mean, c.Std)
}
